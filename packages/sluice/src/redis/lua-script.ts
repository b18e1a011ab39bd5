/**
 * The one script behind every call of the Redis store. It runs a batch of entries (decide, reserve, peek,
 * refund, reset) atomically, in order, so entries of one batch see each other's effects.
 *
 * It computes exactly the engine's fixed-point arithmetic (core/bucket-math.ts, core/evaluate.ts): integer
 * units of 1 / (window x 1000) token, refill of `quota` units per millisecond, elapsed time capped at fillMs and
 * clamped at 0, capacity `burst x unitsPerToken`, queue debt `queue.limit x unitsPerToken`. Every operand stays an
 * integer below 2^53, so Lua doubles and JavaScript doubles agree bit for bit; units are printed with `%.0f`
 * (never `tostring`, whose 14 significant digits would round them) and returned as strings.
 *
 * Bucket value: the string `<units>:<last ms>`. A bucket that is full after an entry is deleted (it decides
 * like a missing one), every other bucket gets PX at its time to full, so Redis memory stays bounded.
 *
 * KEYS: every bucket key of every entry, in order.
 * ARGV[1]: number of entries. ARGV[2]: extra TTL milliseconds (non-zero only with an injected clock).
 * ARGV[3]: number of policies m, then m x (quota, unitsPerToken, burst, shadow 0/1, queue limit (0: none), queue
 * maxWaitMs): each policy of the call once, so an entry names its policies by index (fewer arguments to encode,
 * send and parse per decision).
 * Then per entry: op (d decide, r reserve, p peek, f refund, x reset), cost, now (empty: server TIME), n checks,
 * and per check the policy's index (1-based).
 * Reply: per decide/reserve/peek entry the flag 1/0 (allowed) then each check's units after refill and before
 * the decision; per refund/reset entry the flag 1.
 */
export const SCRIPT = `
if redis.replicate_commands then redis.replicate_commands() end
-- Locals, not globals: every global lookup goes through the protected global table of the scripting engine.
local ARGV, KEYS, tonumber, call = ARGV, KEYS, tonumber, redis.call
local fmt, floor, ceil, find, sub = string.format, math.floor, math.ceil, string.find, string.sub
local entries = tonumber(ARGV[1])
local slack = tonumber(ARGV[2])
local serverNow
local cache = {}
local out = {}
local PQ, PP, PB, PS, PL, PW, PC, PF = {}, {}, {}, {}, {}, {}, {}, {}
local a, k = 4, 1
for j = 1, tonumber(ARGV[3]) do
  local quota, upt, burst = tonumber(ARGV[a]), tonumber(ARGV[a + 1]), tonumber(ARGV[a + 2])
  PQ[j], PP[j], PB[j], PS[j] = quota, upt, burst, ARGV[a + 3] == '1'
  PL[j], PW[j] = tonumber(ARGV[a + 4]) * upt, tonumber(ARGV[a + 5])
  PC[j] = burst * upt
  PF[j] = ceil((PC[j] + PL[j]) / quota)
  a = a + 6
end

local function clockNow(s)
  if s ~= '' then return tonumber(s) end
  if not serverNow then
    local t = call('TIME')
    serverNow = tonumber(t[1]) * 1000 + floor(tonumber(t[2]) / 1000)
  end
  return serverNow
end

local function load(key)
  local b = cache[key]
  if b then return b end
  b = {}
  local v = call('GET', key)
  if v then
    local i = find(v, ':', 1, true)
    b.u = tonumber(sub(v, 1, i - 1))
    b.t = tonumber(sub(v, i + 1))
    b.stored = true
  end
  cache[key] = b
  return b
end

-- Units held now: a missing bucket is full; time that went backwards adds nothing.
local function current(b, now, quota, cap, fill)
  if b.u == nil then return cap end
  local e = now - b.t
  if e <= 0 then return b.u end
  if e > fill then e = fill end
  local nx = b.u + e * quota
  if nx < cap then return nx end
  return cap
end

local function keep(b, units, now, quota, cap)
  if b.u == nil and units >= cap then return end
  local last = now
  if b.t ~= nil and b.t > now then last = b.t end
  b.u, b.t, b.cap, b.dirty = units, last, cap, true
  b.ttl = (last - now) + ceil((cap - units) / quota) + slack
end

local U, Q, P, B, S, L, W, C, F, BK = {}, {}, {}, {}, {}, {}, {}, {}, {}, {}
for _ = 1, entries do
  local op, cost, now, n = ARGV[a], tonumber(ARGV[a + 1]), clockNow(ARGV[a + 2]), tonumber(ARGV[a + 3])
  a = a + 4
  for i = 1, n do
    local j = tonumber(ARGV[a])
    Q[i], P[i], B[i], S[i], L[i], W[i], C[i], F[i] = PQ[j], PP[j], PB[j], PS[j], PL[j], PW[j], PC[j], PF[j]
    a = a + 1
    if op == 'x' then
      cache[KEYS[k]] = { dirty = true, stored = true }
    else
      BK[i] = load(KEYS[k])
      U[i] = current(BK[i], now, Q[i], C[i], F[i])
    end
    k = k + 1
  end
  if op == 'f' then
    for i = 1, n do
      if BK[i].u ~= nil then
        local u = U[i] + cost * P[i]
        if u > C[i] then u = C[i] end
        keep(BK[i], u, now, Q[i], C[i])
      end
    end
    out[#out + 1] = '1'
  elseif op == 'x' then
    out[#out + 1] = '1'
  else
    local blocked, exceeds = false, false
    for i = 1, n do
      if cost > B[i] then
        if not S[i] then exceeds = true end
      else
        local after = U[i] - cost * P[i]
        if after < 0 then
          local queued = op == 'r' and L[i] > 0 and -after <= L[i] and ceil(-after / Q[i]) <= W[i]
          if not queued and not S[i] then blocked = true end
        end
      end
    end
    local allowed = not blocked and not exceeds
    out[#out + 1] = allowed and '1' or '0'
    for i = 1, n do out[#out + 1] = fmt('%.0f', U[i]) end
    if op ~= 'p' then
      for i = 1, n do
        local need = cost * P[i]
        local limited
        if cost > B[i] then limited = true
        elseif U[i] >= need then limited = false
        elseif op == 'r' and L[i] > 0 and need - U[i] <= L[i] then limited = ceil((need - U[i]) / Q[i]) > W[i]
        else limited = true end
        local u = U[i]
        if allowed and not limited then u = u - need end
        if u ~= U[i] or BK[i].t == nil or now > BK[i].t then keep(BK[i], u, now, Q[i], C[i]) end
      end
    end
  end
end

for key, b in pairs(cache) do
  if b.dirty then
    if b.u == nil or b.u >= b.cap then
      if b.stored then call('DEL', key) end
    else
      call('SET', key, fmt('%.0f:%.0f', b.u, b.t), 'PX', fmt('%.0f', b.ttl))
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
export const SCRIPT_SHA = '7544dc22f9b58ee5b797882da2f405fde178bed7';
