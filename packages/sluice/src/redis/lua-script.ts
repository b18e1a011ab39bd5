/**
 * The one script behind every call of the Redis store. It runs a batch of entries (decide, reserve, peek,
 * refund, reset) atomically, in order, so entries of one batch see each other's effects.
 *
 * It computes exactly the engine's fixed-point arithmetic (core/bucket-math.ts, core/evaluate.ts): integer
 * units of 1 / (window x 1000) token, refill of `quota` units per millisecond, elapsed time capped at fillMs and
 * clamped at 0, capacity `burst x unitsPerToken`, queue debt `queue.limit x unitsPerToken`. Every operand stays an
 * integer below 2^53, so Lua doubles and JavaScript doubles agree bit for bit. Units go back as Redis integers (a
 * Lua number in a reply is converted to a 64-bit integer: exact) and are stored with `%d` (also a 64-bit cast,
 * about twice as fast as `%.0f`; never `tostring`, whose 14 significant digits would round them); a TTL is passed
 * to SET formatted with `%d` too (a Lua number argument would be printed with `%.14g`, a float conversion that
 * cost the server about 1,000 instructions per call, D-R11).
 *
 * Bucket value, in one of two formats. With the server's clock (the default), the integer string `<units short of
 * full>`, the key expiring at the bucket's time plus its time to full: the time is read back as the expiry
 * (PEXPIRETIME) less the time to full, so a decision needs no clock reading of its own (D-R12). With an injected
 * clock, which need not run at the server's pace, the string `<units>:<last ms>` with PX at the time to full plus a
 * slack. Either format is read whatever the clock. A bucket that is full after an entry is deleted (it decides
 * like a missing one), every bucket whose units changed gets its expiry at its time to full, so Redis memory stays
 * bounded. A bucket whose units did not change (a denial, a peek) is not written at all: its stored units and
 * time refill to the same level at any later time, and its expiry, set when it was written, is still its time
 * to full (see D-R06). Needs Redis 7.0 or later (PEXPIRETIME) or Valkey; an older server answers a stored bucket
 * with an error that says so.
 *
 * Server work per bucket: one share of an MGET (all buckets of the batch are read by one command per 1,000 keys),
 * a PEXPIRETIME when it is stored in the server-clock format, and one SET when it changed.
 *
 * KEYS: every bucket key of every entry, in order.
 * ARGV[1]: extra TTL milliseconds (non-zero only with an injected clock).
 * ARGV[2]: number of policies m, then m x (quota, unitsPerToken, burst, shadow 0/1, queue limit (0: none), queue
 * maxWaitMs, step ms (0: continuous refill; -1: a concurrency policy, followed by two more arguments: the calling
 * store's instance id and its lease milliseconds)): each policy of the call once, so entries name their policies by
 * index.
 *
 * Concurrency slots (step -1, D-G108): the bucket's value is the list `<instance>=<slots>@<lease end ms>,...` of
 * the stores holding slots of that key, in the key itself (so in its hash tag: one Cluster slot), expiring with the
 * last lease. A read counts only the holders whose lease has not ended (a store that crashed or lost Redis stops
 * renewing, so its slots come back within the lease) and drops the others at the next write; the units held are
 * the slots nobody holds, which nothing refills. A take adds to the calling store's own count, a refund takes from
 * it only (never from another store's), and every write of its own count renews its lease. A renewal (op `l`,
 * cost: the slots the store still runs) sets its count to the smaller of the two, so a release lost while Redis was
 * unreachable is not renewed forever, or to what the store runs when Redis holds nothing of it (its lease ended
 * while it stalled, or Redis lost the key): those requests are still in flight. A cost of -1 - n says n with no
 * take awaiting its answer; only such a count is restored where Redis holds nothing, since a take in flight may
 * turn out refused.
 *
 * Stepped refill (step ms > 0, core/bucket-math.ts `refill` and `nextLast`): `floor(elapsed / step)` whole steps of
 * `quota x unitsPerToken` units each, and a bucket's stored time is the start of its current step rather than its
 * last use; a bucket that is full starts a new timeline at the next take. Its TTL is the time to the step that
 * fills it.
 * Then runs of entries that share everything but their keys, until the end of ARGV: op (d decide, r reserve,
 * p peek, f refund, s settle (cost: the signed delta), x reset, l lease renewal), cost, now (empty: server TIME), n checks, per check the policy's index (1-based),
 * and the number of entries in the run (each takes the next n KEYS). Concurrent calls of one limiter usually
 * share their shape, so a batch of 64 decisions sends about 6 arguments besides its keys.
 * Reply of the general form (the short form's is described at its path below): per decide/reserve/peek entry the
 * flag '1'/'0' (allowed) then each check's units after refill and
 * before the decision (an integer), followed for a stepped policy by its phase (milliseconds since its current step
 * began, an integer); per refund/settle/reset entry the flag '1'.
 */
export const SCRIPT = `
if redis.replicate_commands then redis.replicate_commands() end
-- Locals, not globals: every global lookup goes through the protected global table of the scripting engine.
local ARGV, KEYS, tonumber, call, pcall, unpack = ARGV, KEYS, tonumber, redis.call, redis.pcall, unpack
local fmt, floor, ceil, find, sub = string.format, math.floor, math.ceil, string.find, string.sub
local gmatch, concat = string.gmatch, table.concat
-- Redis before 7.0 has no PEXPIRETIME, which reads a server-clock bucket: an error that says so, not a wrong answer.
local NEEDS_7 = 'ERR the rate-limit script needs Redis 7.0 or later, or Valkey'
-- 2^53 - 1: a settled cost's debt keeps every sum below it (core/policy.ts settleDebtUnits).
local MAXN = 9007199254740991

-- The common calls, decides of distinct keys under one policy with a continuous refill, no queue and no shadow
-- mode, all at one cost and one clock reading (one decide, or a batch of concurrent ones), come in a short form of
-- their own and take this shorter path: the same arithmetic as the general path below for that case, without its
-- tables and loops (which cost about half of a batched decision's server time) and with a fraction of the
-- arguments to send and parse (D-R10 to D-R13). lua-fast-path.test.ts holds the two paths equal.
-- ARGV: quota, capacity (burst x unitsPerToken), units to take (cost x unitsPerToken), then with an injected clock
-- only: now, slack. Fewer than six arguments tell it from the general form, which has at least fifteen. Each
-- argument and each decimal tonumber (C's strtod) costs the server more than the arithmetic here, so the client
-- sends products rather than their factors (a take above the capacity is a cost above the burst) (D-R11). Decimal
-- rather than hexadecimal, which Lua parses with strtoul, cheaper but 32 bits wide where C's long is (Windows,
-- 32-bit builds). KEYS: the buckets, distinct, at most 1,000 (one MGET).
-- With the server's clock a call reads no clock of its own (D-R12): a new bucket starts its time at its write
-- (PSETEX, relative), and the first stored one gives the call's time as its expiry (PEXPIRETIME) less what is left
-- of it (PTTL), both integers where TIME is two decimal strings; stored buckets are written to expire at an
-- absolute time (PXAT) of that one reading: exact even where the clock moves during a script (Redis before 7.2).
-- Reply: per key the units held before the decision when allowed, -1 - those units when denied; one integer for
-- one key (an array of two cost the server about 5,000 instructions more), an array of them for several.
if #ARGV < 6 then
  local quota, cap, need = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])
  local at, n = ARGV[4], #KEYS
  local now, slack, known = 0, 0, false
  if at then now, slack, known = tonumber(at), tonumber(ARGV[5]), true end
  local raw, out
  if n > 1 then raw, out = call('MGET', unpack(KEYS)), {} end
  for i = 1, n do
    local key, v = KEYS[i], nil
    if raw then v = raw[i] else v = call('GET', key) end
    local u, last = cap, 0
    if v then
      local d, x = tonumber(v), -1
      if d then
        x = pcall('PEXPIRETIME', key)
        if type(x) ~= 'number' then return {err = NEEDS_7} end
        if x >= 0 and not known then now, known = x - call('PTTL', key), true end
      end
      -- A bucket in the injected-clock format, or one without an expiry (a PERSIST from outside), has no time in
      -- its expiry: the call reads the server's TIME instead.
      if not known then
        local t = call('TIME')
        now, known = tonumber(t[1]) * 1000 + floor(tonumber(t[2]) / 1000), true
      end
      if not d then
        local c = find(v, ':', 1, true)
        u, last = tonumber(sub(v, 1, c - 1)), tonumber(sub(v, c + 1))
      elseif x < 0 then
        -- No expiry: its time is unknown, so it refills from now on, never from before.
        u, last = cap - d, now
      else
        u, last = cap - d, x - ceil(d / quota)
      end
      local e = now - last
      if e > 0 then
        -- From the deepest debt a settled cost leaves (one burst, less near 2^53: core/policy.ts settleDebtUnits).
        local deep = MAXN - cap - quota
        if deep > cap then deep = cap end
        local fill = ceil((cap + deep) / quota)
        if e > fill then e = fill end
        u = u + e * quota
        if u > cap then u = cap end
      end
    end
    local r = u
    if need > cap or u < need then
      r = -1 - u
    elseif need > 0 then
      local after = u - need
      if after >= cap then
        if v then call('DEL', key) end
      elseif at then
        if not v or last < now then last = now end
        -- Integer strings: a Lua number would be printed with %.14g, a float conversion.
        call('PSETEX', key, fmt('%d', (last - now) + ceil((cap - after) / quota) + slack), fmt('%d:%d', after, last))
      elseif v then
        if last < now then last = now end
        call('SET', key, fmt('%d', cap - after), 'PXAT', fmt('%d', last + ceil((cap - after) / quota)))
      else
        call('PSETEX', key, fmt('%d', ceil((cap - after) / quota)), fmt('%d', cap - after))
      end
    end
    if not out then return r end
    out[i] = r
  end
  return out
end

local slack = tonumber(ARGV[1])

-- Flat tables with a fixed stride instead of a table per field or per record, each created with room for one
-- record: a table that grows from empty is reallocated at 1, 2, 4 and 8 entries, which cost more server time than
-- the arithmetic of a one-decision call (D-R10).
-- Policies, twelve fields each from base b = (index - 1) x 12: b+1 quota, b+2 unitsPerToken, b+3 burst, b+4 shadow,
-- b+5 queue limit in units, b+6 queue maxWaitMs, b+7 capacity, b+8 ms to fill from empty, b+9 step ms (0:
-- continuous, -1: concurrency), b+10 units per step, b+11 instance id (concurrency), b+12 lease ms (concurrency).
local PP = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}
local a = 3
for b = 0, (tonumber(ARGV[2]) - 1) * 12, 12 do
  local quota, upt, burst = tonumber(ARGV[a]), tonumber(ARGV[a + 1]), tonumber(ARGV[a + 2])
  local step = tonumber(ARGV[a + 6])
  if step < 0 then
    -- Concurrency slots: nothing refills them (quota 0, so elapsed time adds no units), no queue, no debt.
    PP[b + 1], PP[b + 2], PP[b + 3], PP[b + 4], PP[b + 5], PP[b + 6], PP[b + 7], PP[b + 8], PP[b + 9], PP[b + 10] =
      0, upt, burst, ARGV[a + 3] == '1', 0, 0, burst * upt, 0, -1, 0
    PP[b + 11], PP[b + 12] = ARGV[a + 7], tonumber(ARGV[a + 8])
    a = a + 9
  else
  local limit, cap = tonumber(ARGV[a + 4]) * upt, burst * upt
  PP[b + 1], PP[b + 2], PP[b + 3], PP[b + 4], PP[b + 5], PP[b + 6], PP[b + 7] =
    quota, upt, burst, ARGV[a + 3] == '1', limit, tonumber(ARGV[a + 5]), cap
  -- The deepest debt: a queue's, or a settled cost's (one burst, less near 2^53: core/policy.ts settleDebtUnits).
  local per = quota * upt
  local deep = MAXN - cap - limit - quota
  if step > 0 and per > quota then deep = MAXN - cap - limit - per end
  if deep > cap then deep = cap end
  if limit > deep then deep = limit end
  if step > 0 then
    PP[b + 8], PP[b + 9], PP[b + 10] = ceil((cap + deep) / per) * step, step, per
  else
    PP[b + 8], PP[b + 9], PP[b + 10] = ceil((cap + deep) / quota), 0, 0
  end
  PP[b + 11], PP[b + 12] = false, 0
  a = a + 7
  end
end

-- One MGET per 1,000 keys instead of a GET per bucket (unpack is bounded by the Lua stack).
local nkeys = #KEYS
local raw
if nkeys == 0 then
  raw = {}
elseif nkeys <= 1000 then
  raw = call('MGET', unpack(KEYS))
else
  raw = {}
  for i = 1, nkeys, 1000 do
    local last = i + 999
    if last > nkeys then last = nkeys end
    local part = call('MGET', unpack(KEYS, i, last))
    for j = 1, #part do raw[i + j - 1] = part[j] end
  end
end

-- Buckets, seven fields each from base s: s+1 key, s+2 units (false: missing, a full bucket), s+3 last time
-- (false: missing), s+4 stored in Redis, s+5 dirty, s+6 TTL to write, s+7 capacity.
local slotOf, SL, ns = {}, {false, false, false, false, false, false, false}, 0
-- Concurrency buckets only, by bucket base s: {slots of the other live holders, their list entries, policy base,
-- latest lease end among them}.
local CL = {}
-- Checks of the current run, four fields each from base x = (i - 1) x 4: x+1 policy base, x+2 bucket base,
-- x+3 units held now, x+4 (stepped) the bucket's time after the refill (nextLast).
local X = {0, 0, 0, 0}

-- Records the units of bucket s after a take or a refund by a check of policy pb (t: that check's time after
-- the refill, for a stepped policy), and the TTL to write: its time to full.
local function keep(s, units, now, pb, t)
  local cap = PP[pb + 7]
  if SL[s + 2] == false and units >= cap then return end
  if PP[pb + 9] < 0 then
    -- Concurrency: the write renews this store's lease from now; the TTL comes from the leases (see the end).
    SL[s + 2], SL[s + 3], SL[s + 5], SL[s + 7] = units, now, true, cap
    return
  end
  local step, last = PP[pb + 9], now
  if step > 0 then
    last = t
    SL[s + 6] = (last - now) + ceil((cap - units) / PP[pb + 10]) * step + slack
  else
    local stored = SL[s + 3]
    if stored ~= false and stored > now then last = stored end
    SL[s + 6] = (last - now) + ceil((cap - units) / PP[pb + 1]) + slack
  end
  SL[s + 2], SL[s + 3], SL[s + 5], SL[s + 7] = units, last, true, cap
end

-- Milliseconds until a check of policy pb gains need more units (msUntil): continuous, or to the step that
-- brings them.
local function wait(pb, t, need, now)
  local step = PP[pb + 9]
  if step > 0 then return ceil(need / PP[pb + 10]) * step - (now - t) end
  return ceil(need / PP[pb + 1])
end

local out, o, k = {0, 0}, 0, 1
local serverNow
local nargs = #ARGV
while a <= nargs do
  local op, cost, now, n = ARGV[a], tonumber(ARGV[a + 1]), ARGV[a + 2], tonumber(ARGV[a + 3])
  if now ~= '' then
    now = tonumber(now)
  else
    if not serverNow then
      local t = call('TIME')
      serverNow = tonumber(t[1]) * 1000 + floor(tonumber(t[2]) / 1000)
    end
    now = serverNow
  end
  a = a + 4
  for x = 1, n * 4, 4 do
    X[x] = (tonumber(ARGV[a]) - 1) * 12
    a = a + 1
  end
  local count = tonumber(ARGV[a])
  a = a + 1
  for _ = 1, count do
    for x = 0, (n - 1) * 4, 4 do
      local key = KEYS[k]
      local s = slotOf[key]
      if not s then
        s = ns * 7
        ns = ns + 1
        slotOf[key] = s
        SL[s + 1], SL[s + 5] = key, false
        local v = raw[k]
        local pb = X[x + 1]
        if PP[pb + 9] < 0 then
          -- Concurrency: the slots of live holders are taken, this store's own counted apart from the others'.
          local others, own, list, till, me = 0, 0, {}, 0, PP[pb + 11]
          if v then
            for id, c, t in gmatch(v, '([^=,]+)=(%d+)@(%d+)') do
              c, t = tonumber(c), tonumber(t)
              if t > now then
                if id == me then
                  own = c
                else
                  others = others + c
                  list[#list + 1] = fmt('%s=%d@%d', id, c, t)
                  if t > till then till = t end
                end
              end
            end
          end
          CL[s] = {others, list, pb, till}
          SL[s + 2], SL[s + 3], SL[s + 4] = PP[pb + 7] - (others + own) * PP[pb + 2], now, v ~= false and v ~= nil
        elseif v then
          local d = tonumber(v)
          if d then
            -- The server-clock format (D-R12): d units short of full, expiring at its time after the refill
            -- plus its time to full, so that time is the expiry less the time to full of d.
            local xt = pcall('PEXPIRETIME', key)
            if type(xt) ~= 'number' then return {err = NEEDS_7} end
            local step = PP[pb + 9]
            if xt < 0 then
              -- No expiry (a PERSIST from outside): its time is unknown, so it refills from now on.
              xt = now
            elseif step > 0 then
              xt = xt - ceil(d / PP[pb + 10]) * step
            else
              xt = xt - ceil(d / PP[pb + 1])
            end
            SL[s + 2], SL[s + 3], SL[s + 4] = PP[pb + 7] - d, xt, true
          else
            local c = find(v, ':', 1, true)
            SL[s + 2], SL[s + 3], SL[s + 4] = tonumber(sub(v, 1, c - 1)), tonumber(sub(v, c + 1)), true
          end
        else
          SL[s + 2], SL[s + 3], SL[s + 4] = false, false, false
        end
      end
      k = k + 1
      if op == 'x' then
        SL[s + 2], SL[s + 3], SL[s + 5] = false, false, true
      else
        -- Units held now: a missing bucket is full; time that went backwards adds nothing. A stepped bucket also
        -- gets its time after the refill (nextLast): the current step's start, or now once full.
        X[x + 2] = s
        local pb = X[x + 1]
        local u, cap = SL[s + 2], PP[pb + 7]
        if u == false then
          X[x + 3], X[x + 4] = cap, now
        else
          local last = SL[s + 3]
          local e = now - last
          local step = PP[pb + 9]
          if step > 0 then
            local steps = 0
            if e > 0 then
              if e > PP[pb + 8] then e = PP[pb + 8] end
              steps = floor(e / step)
            end
            u = u + steps * PP[pb + 10]
            if u >= cap then
              X[x + 3], X[x + 4] = cap, now
            else
              X[x + 3], X[x + 4] = u, last + steps * step
            end
          else
            if e > 0 then
              if e > PP[pb + 8] then e = PP[pb + 8] end
              u = u + e * PP[pb + 1]
              if u > cap then u = cap end
            end
            X[x + 3] = u
          end
        end
      end
    end
    if op == 'f' then
      for x = 0, (n - 1) * 4, 4 do
        local s, pb = X[x + 2], X[x + 1]
        if SL[s + 2] ~= false then
          local u, top = X[x + 3] + cost * PP[pb + 2], PP[pb + 7]
          -- A release gives back this store's own slots only, never another holder's.
          if PP[pb + 9] < 0 then top = top - CL[s][1] * PP[pb + 2] end
          if u > top then u = top end
          keep(s, u, now, pb, X[x + 4])
        end
      end
      o = o + 1
      out[o] = '1'
    elseif op == 's' then
      -- A cost settled after the response (core/settle-math.ts): cost is the signed delta in tokens. Negative
      -- gives back (never above the burst), positive takes, down to the settled debt's floor.
      for x = 0, (n - 1) * 4, 4 do
        local s, pb = X[x + 2], X[x + 1]
        -- A concurrency policy's slots are held and released, never settled.
        if PP[pb + 9] >= 0 and (cost > 0 or SL[s + 2] ~= false) then
          local upt, cap, limit, quota, step = PP[pb + 2], PP[pb + 7], PP[pb + 5], PP[pb + 1], PP[pb + 9]
          local sd = MAXN - cap - limit - quota
          if step > 0 and PP[pb + 10] > quota then sd = MAXN - cap - limit - PP[pb + 10] end
          if sd > cap then sd = cap end
          local most = limit
          if sd > most then most = sd end
          most = PP[pb + 3] + floor(most / upt)
          local u = X[x + 3]
          if cost < 0 then
            local give = -cost
            if give > most then give = most end
            u = u + give * upt
            if u > cap then u = cap end
          else
            local take = cost
            if take > most then take = most end
            local bottom = -sd
            if u < bottom then bottom = u end
            u = u - take * upt
            if u < bottom then u = bottom end
          end
          keep(s, u, now, pb, X[x + 4])
        end
      end
      o = o + 1
      out[o] = '1'
    elseif op == 'x' then
      o = o + 1
      out[o] = '1'
    elseif op == 'l' then
      -- A lease renewal: this store's count becomes the smaller of what Redis holds and what it still runs (cost),
      -- or what it runs when Redis holds nothing of it (its lease ended while it stalled, or Redis lost the key),
      -- but only when none of its takes is awaiting an answer (cost -1 - count), since one may have been refused.
      local runs, whole = cost, cost < 0
      if whole then runs = -1 - cost end
      for x = 0, (n - 1) * 4, 4 do
        local s, pb = X[x + 2], X[x + 1]
        if PP[pb + 9] < 0 then
          local cap, upt, others = PP[pb + 7], PP[pb + 2], CL[s][1]
          local own = (cap - X[x + 3]) / upt - others
          if own > runs or (whole and own <= 0) then own = runs end
          SL[s + 2], SL[s + 3], SL[s + 5], SL[s + 7] = cap - (others + own) * upt, now, true, cap
        end
      end
      o = o + 1
      out[o] = '1'
    else
      local blocked, exceeds = false, false
      for x = 0, (n - 1) * 4, 4 do
        local pb = X[x + 1]
        if cost > PP[pb + 3] then
          if not PP[pb + 4] then exceeds = true end
        else
          local after = X[x + 3] - cost * PP[pb + 2]
          if after < 0 then
            local limit = PP[pb + 5]
            local queued = op == 'r' and limit > 0 and -after <= limit
              and wait(pb, X[x + 4], -after, now) <= PP[pb + 6]
            if not queued and not PP[pb + 4] then blocked = true end
          end
        end
      end
      local allowed = not blocked and not exceeds
      o = o + 1
      out[o] = allowed and '1' or '0'
      for x = 0, (n - 1) * 4, 4 do
        -- Numbers, which Redis answers as integers: exact below 2^63, and no string.format per check.
        o = o + 1
        out[o] = X[x + 3]
        if PP[X[x + 1] + 9] > 0 then
          o = o + 1
          out[o] = now - X[x + 4]
        end
      end
      if op ~= 'p' and allowed then
        for x = 0, (n - 1) * 4, 4 do
          local pb, u = X[x + 1], X[x + 3]
          local need = cost * PP[pb + 2]
          local limited
          if cost > PP[pb + 3] then limited = true
          elseif u >= need then limited = false
          elseif op == 'r' and PP[pb + 5] > 0 and need - u <= PP[pb + 5] then
            limited = wait(pb, X[x + 4], need - u, now) > PP[pb + 6]
          else limited = true end
          -- Only a bucket that gave units is written: one whose level did not change refills from its stored
          -- value to the same level as it would from a rewritten one, and keeps the same time to full.
          if not limited and need > 0 then keep(X[x + 2], u - need, now, pb, X[x + 4]) end
        end
      end
    end
  end
end

for s = 0, (ns - 1) * 7, 7 do
  local c = CL[s]
  if c and SL[s + 5] then
    -- Concurrency: the live holders' list with this store's count and a lease from its last write, expiring with
    -- the last lease; nobody holding anything deletes it.
    local u, pb, list, till, at = SL[s + 2], c[3], c[2], c[4], SL[s + 3]
    local own = 0
    if u ~= false then own = (PP[pb + 7] - u) / PP[pb + 2] - c[1] end
    if own > 0 then
      local mine = at + PP[pb + 12]
      list[#list + 1] = fmt('%s=%d@%d', PP[pb + 11], own, mine)
      if mine > till then till = mine end
    end
    if u == false or #list == 0 then
      -- A reset (u false) forgets every holder; an empty list holds nothing.
      if SL[s + 4] then call('DEL', SL[s + 1]) end
    else
      local ttl = till - at + slack
      if ttl < 1 then ttl = 1 end
      call('PSETEX', SL[s + 1], fmt('%d', ttl), concat(list, ','))
    end
  elseif SL[s + 5] then
    local u = SL[s + 2]
    if u == false or u >= SL[s + 7] then
      if SL[s + 4] then call('DEL', SL[s + 1]) end
    elseif serverNow then
      -- With the server's clock: units short of full, expiring at an absolute time of the clock reading.
      call('SET', SL[s + 1], fmt('%d', SL[s + 7] - u), 'PXAT', fmt('%d', serverNow + SL[s + 6]))
    else
      call('PSETEX', SL[s + 1], fmt('%d', SL[s + 6]), fmt('%d:%d', u, SL[s + 3]))
    end
  end
end
-- The reply ends at the first nil: clear what is left of the room made for one decision.
for i = o + 1, 2 do out[i] = nil end
return out
`;

/**
 * SHA-1 of {@link SCRIPT}, the name EVALSHA runs it by. A constant rather than computed, so this subpath needs no
 * Node module; redis-store.test.ts fails when the script changes and this is not updated (a stale value would cost
 * a NOSCRIPT round trip on every call, never a wrong decision).
 */
export const SCRIPT_SHA = '0fa6d34ff3da1bd7c5c56a6291ff2095ac0ea8f6';
