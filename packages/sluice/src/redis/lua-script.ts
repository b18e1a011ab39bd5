import { GENERAL_PATH } from './lua-general-path.js';

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
export const SCRIPT: string =
  `
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

` + GENERAL_PATH;

/**
 * SHA-1 of {@link SCRIPT}, the name EVALSHA runs it by. A constant rather than computed, so this subpath needs no
 * Node module; redis-store.test.ts fails when the script changes and this is not updated (a stale value would cost
 * a NOSCRIPT round trip on every call, never a wrong decision).
 */
export const SCRIPT_SHA = '0fa6d34ff3da1bd7c5c56a6291ff2095ac0ea8f6';
