/**
 * The one script behind every call of the Redis store. It runs a batch of entries (decide, reserve, peek,
 * refund, reset) atomically, in order, so entries of one batch see each other's effects.
 *
 * It computes exactly the engine's fixed-point arithmetic (core/bucket-math.ts, core/evaluate.ts): integer
 * units of 1 / (window x 1000) token, refill of `quota` units per millisecond, elapsed time capped at fillMs and
 * clamped at 0, capacity `burst x unitsPerToken`, queue debt `queue.limit x unitsPerToken`. Every operand stays an
 * integer below 2^53, so Lua doubles and JavaScript doubles agree bit for bit; units are printed with `%d` (a
 * cast to a 64-bit integer, exact for every integer below 2^53, and about twice as fast as `%.0f`; never
 * `tostring`, whose 14 significant digits would round them) and returned as strings.
 *
 * Bucket value: the string `<units>:<last ms>`. A bucket that is full after an entry is deleted (it decides
 * like a missing one), every bucket whose units changed gets PX at its time to full, so Redis memory stays
 * bounded. A bucket whose units did not change (a denial, a peek) is not written at all: its stored units and
 * time refill to the same level at any later time, and its expiry, set when it was written, is still its time
 * to full (see D-R06).
 *
 * Server work per bucket: one share of an MGET (all buckets of the batch are read by one command per 1,000 keys)
 * and one SET with PX when it changed.
 *
 * KEYS: every bucket key of every entry, in order.
 * ARGV[1]: extra TTL milliseconds (non-zero only with an injected clock).
 * ARGV[2]: number of policies m, then m x (quota, unitsPerToken, burst, shadow 0/1, queue limit (0: none), queue
 * maxWaitMs, step ms (0: continuous refill)): each policy of the call once, so entries name their policies by index.
 *
 * Stepped refill (step ms > 0, core/bucket-math.ts `refill` and `nextLast`): `floor(elapsed / step)` whole steps of
 * `quota x unitsPerToken` units each, and a bucket's stored time is the start of its current step rather than its
 * last use; a bucket that is full starts a new timeline at the next take. Its TTL is the time to the step that
 * fills it.
 * Then runs of entries that share everything but their keys, until the end of ARGV: op (d decide, r reserve,
 * p peek, f refund, x reset), cost, now (empty: server TIME), n checks, per check the policy's index (1-based),
 * and the number of entries in the run (each takes the next n KEYS). Concurrent calls of one limiter usually
 * share their shape, so a batch of 64 decisions sends about 6 arguments besides its keys.
 * Reply: per decide/reserve/peek entry the flag 1/0 (allowed) then each check's units after refill and before
 * the decision, followed for a stepped policy by its phase (milliseconds since its current step began); per
 * refund/reset entry the flag 1.
 */
export const SCRIPT = `
if redis.replicate_commands then redis.replicate_commands() end
-- Locals, not globals: every global lookup goes through the protected global table of the scripting engine.
local ARGV, KEYS, tonumber, call, unpack = ARGV, KEYS, tonumber, redis.call, unpack
local fmt, floor, ceil, find, sub = string.format, math.floor, math.ceil, string.find, string.sub
local slack = tonumber(ARGV[1])
local serverNow
local PQ, PP, PB, PS, PL, PW, PC, PF, PT, PU = {}, {}, {}, {}, {}, {}, {}, {}, {}, {}
local a = 3
for j = 1, tonumber(ARGV[2]) do
  local quota, upt, burst = tonumber(ARGV[a]), tonumber(ARGV[a + 1]), tonumber(ARGV[a + 2])
  PQ[j], PP[j], PB[j], PS[j] = quota, upt, burst, ARGV[a + 3] == '1'
  PL[j], PW[j] = tonumber(ARGV[a + 4]) * upt, tonumber(ARGV[a + 5])
  PC[j] = burst * upt
  -- Step length and units per step; 0 and 0 for a continuous refill.
  PT[j] = tonumber(ARGV[a + 6])
  PU[j] = 0
  if PT[j] > 0 then
    PU[j] = quota * upt
    PF[j] = ceil((PC[j] + PL[j]) / PU[j]) * PT[j]
  else
    PF[j] = ceil((PC[j] + PL[j]) / quota)
  end
  a = a + 7
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

local function clockNow(s)
  if s ~= '' then return tonumber(s) end
  if not serverNow then
    local t = call('TIME')
    serverNow = tonumber(t[1]) * 1000 + floor(tonumber(t[2]) / 1000)
  end
  return serverNow
end

-- Buckets of the batch, by slot: key, units (nil: missing, a full bucket), last time, stored in Redis, dirty,
-- capacity and TTL to write. Parallel arrays rather than a table per bucket.
local slotOf, SK, SU, ST, SS, SD, SC, SX = {}, {}, {}, {}, {}, {}, {}, {}
local ns = 0
local function load(k)
  local key = KEYS[k]
  local s = slotOf[key]
  if s then return s end
  ns = ns + 1
  s = ns
  slotOf[key], SK[s], SD[s] = s, key, false
  local v = raw[k]
  if v then
    local i = find(v, ':', 1, true)
    SU[s], ST[s], SS[s] = tonumber(sub(v, 1, i - 1)), tonumber(sub(v, i + 1)), true
  else
    SS[s] = false
  end
  return s
end

-- Units held now: a missing bucket is full; time that went backwards adds nothing. A stepped bucket also gets its
-- time after the refill in A[i] (nextLast): the current step's start, or now once full.
local A = {}
local function current(s, now, i, quota, cap, fill, step, per)
  local u = SU[s]
  if u == nil then
    A[i] = now
    return cap
  end
  local last = ST[s]
  local e = now - last
  if step > 0 then
    local k = 0
    if e > 0 then
      if e > fill then e = fill end
      k = floor(e / step)
    end
    local nx = u + k * per
    if nx >= cap then
      A[i] = now
      return cap
    end
    A[i] = last + k * step
    return nx
  end
  if e <= 0 then return u end
  if e > fill then e = fill end
  local nx = u + e * quota
  if nx < cap then return nx end
  return cap
end

local function keep(s, units, now, i, quota, cap, step, per)
  if SU[s] == nil and units >= cap then return end
  local last = now
  if step > 0 then
    last = A[i]
    SX[s] = (last - now) + ceil((cap - units) / per) * step + slack
  else
    if ST[s] ~= nil and ST[s] > now then last = ST[s] end
    SX[s] = (last - now) + ceil((cap - units) / quota) + slack
  end
  SU[s], ST[s], SC[s], SD[s] = units, last, cap, true
end

local out, o, k = {}, 0, 1
local U, Q, P, B, S, L, W, C, F, T, R, BK = {}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}

-- Milliseconds until check i gains need more units (msUntil): continuous, or to the step that brings them.
local function wait(i, need, now)
  if T[i] > 0 then return ceil(need / R[i]) * T[i] - (now - A[i]) end
  return ceil(need / Q[i])
end
local nargs = #ARGV
while a <= nargs do
  local op, cost, now, n = ARGV[a], tonumber(ARGV[a + 1]), clockNow(ARGV[a + 2]), tonumber(ARGV[a + 3])
  a = a + 4
  for i = 1, n do
    local j = tonumber(ARGV[a])
    Q[i], P[i], B[i], S[i], L[i], W[i], C[i], F[i] = PQ[j], PP[j], PB[j], PS[j], PL[j], PW[j], PC[j], PF[j]
    T[i], R[i] = PT[j], PU[j]
    a = a + 1
  end
  local count = tonumber(ARGV[a])
  a = a + 1
  for _ = 1, count do
    for i = 1, n do
      local s = load(k)
      if op == 'x' then
        SU[s], ST[s], SD[s] = nil, nil, true
      else
        BK[i] = s
        U[i] = current(s, now, i, Q[i], C[i], F[i], T[i], R[i])
      end
      k = k + 1
    end
    if op == 'f' then
      for i = 1, n do
        if SU[BK[i]] ~= nil then
          local u = U[i] + cost * P[i]
          if u > C[i] then u = C[i] end
          keep(BK[i], u, now, i, Q[i], C[i], T[i], R[i])
        end
      end
      o = o + 1
      out[o] = '1'
    elseif op == 'x' then
      o = o + 1
      out[o] = '1'
    else
      local blocked, exceeds = false, false
      for i = 1, n do
        if cost > B[i] then
          if not S[i] then exceeds = true end
        else
          local after = U[i] - cost * P[i]
          if after < 0 then
            local queued = op == 'r' and L[i] > 0 and -after <= L[i] and wait(i, -after, now) <= W[i]
            if not queued and not S[i] then blocked = true end
          end
        end
      end
      local allowed = not blocked and not exceeds
      o = o + 1
      out[o] = allowed and '1' or '0'
      for i = 1, n do
        o = o + 1
        out[o] = fmt('%d', U[i])
        if T[i] > 0 then
          o = o + 1
          out[o] = fmt('%d', now - A[i])
        end
      end
      if op ~= 'p' and allowed then
        for i = 1, n do
          local need = cost * P[i]
          local limited
          if cost > B[i] then limited = true
          elseif U[i] >= need then limited = false
          elseif op == 'r' and L[i] > 0 and need - U[i] <= L[i] then limited = wait(i, need - U[i], now) > W[i]
          else limited = true end
          -- Only a bucket that gave units is written: one whose level did not change refills from its stored
          -- value to the same level as it would from a rewritten one, and keeps the same time to full.
          if not limited and need > 0 then keep(BK[i], U[i] - need, now, i, Q[i], C[i], T[i], R[i]) end
        end
      end
    end
  end
end

for s = 1, ns do
  if SD[s] then
    local u = SU[s]
    if u == nil or u >= SC[s] then
      if SS[s] then call('DEL', SK[s]) end
    else
      call('SET', SK[s], fmt('%d:%d', u, ST[s]), 'PX', fmt('%d', SX[s]))
    end
  end
end
return out
`;

/**
 * SHA-1 of {@link SCRIPT}, the name EVALSHA runs it by. A constant rather than computed, so this subpath needs no
 * Node module; redis-store.test.ts fails when the script changes and this is not updated (a stale value would cost
 * a NOSCRIPT round trip on every call, never a wrong decision).
 */
export const SCRIPT_SHA = '4a2b42fcd09b47ebcc3bcdbc25804450aa6ecff3';
