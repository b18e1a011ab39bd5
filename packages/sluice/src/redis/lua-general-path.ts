/**
 * The general path of the rate-limit script (lua-script.ts documents the whole script, its arguments and replies):
 * batches of any shape, every policy kind (stepped refill, queues, shadow mode, concurrency slots as leases), and
 * the settle, refund, reset and lease renewal entries. Kept apart from the short path only to keep each file
 * readable; `SCRIPT` is the two joined, one script and one SHA.
 */
export const GENERAL_PATH = `local slack = tonumber(ARGV[1])

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
