import type { OverrideRule } from '../core/override.js';
import type { OverrideDelta } from '../core/override-log.js';
import { readStoredOverride } from '../core/override-parse.js';

/**
 * The change log of the overrides in Redis, so that a gateway reads what changed since the version it holds
 * instead of every rule: a sorted set (`KEYS[5]`) of `<version>:<id>` by version, one member per rule a write set
 * or removed, trimmed to the last {@link REDIS_OVERRIDE_LOG_LIMIT}; and an epoch (`KEYS[6]`), drawn when the
 * version starts at 1, so that a Redis that started again empty and counted up to the same numbers is read whole
 * rather than taken for the history the gateway knew. A Redis restored from a snapshot brings its own log and
 * epoch, so it is read by its own changes or whole, never mixed.
 */

/** Members kept in the log; a gateway further behind reads every rule. */
export const REDIS_OVERRIDE_LOG_LIMIT = 10_000;

/** Changed ids a gateway reads by name at most; past that it reads every rule (one call, no huge argument list). */
const DELTA_READ_MAX = 1000;

/**
 * Lua run right after a write's `INCR` (as `local v`): logs the ids of `ARGV[first]` and of `ARGV[rest]` onward
 * (removed expired rules), draws the epoch at version 1, and trims the log.
 *
 * @param first - the ARGV index of the rule's id.
 * @param rest - the ARGV index where the ids of further removed rules start, or 0 for none.
 */
export function logWrite(first: number, rest: number): string {
  const more =
    rest === 0 ? '' : `for i = ${rest}, #ARGV do redis.call('ZADD', KEYS[5], v, v .. ':' .. ARGV[i]) end\n`;
  return `if v == 1 then local t = redis.call('TIME') redis.call('SET', KEYS[6], t[1] .. '.' .. t[2]) end
redis.call('ZADD', KEYS[5], v, v .. ':' .. ARGV[${first}])
${more}redis.call('ZREMRANGEBYRANK', KEYS[5], 0, -${REDIS_OVERRIDE_LOG_LIMIT + 1})`;
}

/**
 * Reads the version and epoch; when both are the ones held (ARGV[1], ARGV[2]), nothing more; when the log reaches
 * back to the held version of the same epoch, the ids changed since and their rules now (`false` for removed);
 * otherwise every rule.
 */
export const READ_CHANGES = `local v = redis.call('GET', KEYS[1]) or '0'
local e = redis.call('GET', KEYS[6]) or ''
if v == ARGV[1] and e == ARGV[2] then return {v, e} end
local held = tonumber(ARGV[1])
if held > 0 and e == ARGV[2] and tonumber(v) > held then
  local oldest = redis.call('ZRANGE', KEYS[5], 0, 0, 'WITHSCORES')
  if oldest[2] and tonumber(oldest[2]) <= held + 1 then
    local members = redis.call('ZRANGEBYSCORE', KEYS[5], '(' .. held, v)
    if #members <= ${DELTA_READ_MAX} then
      local seen = {}
      local ids = {}
      for _, m in ipairs(members) do
        local id = string.sub(m, string.find(m, ':', 1, true) + 1)
        if not seen[id] then seen[id] = true ids[#ids + 1] = id end
      end
      local vals = {}
      if #ids > 0 then vals = redis.call('HMGET', KEYS[2], unpack(ids)) end
      return {v, e, 'delta', ids, vals}
    end
  end
end
return {v, e, 'all', redis.call('HGETALL', KEYS[2])}`;

/** What a read of {@link READ_CHANGES} found. */
export type ChangesRead =
  | { readonly kind: 'same'; readonly epoch: string }
  | {
      readonly kind: 'delta';
      readonly version: number;
      readonly epoch: string;
      readonly deltas: OverrideDelta[];
    }
  | {
      readonly kind: 'all';
      readonly version: number;
      readonly epoch: string;
      readonly rules: OverrideRule[];
    };

/**
 * Reads the reply of {@link READ_CHANGES}. A stored rule that does not parse counts as removed (it is not
 * applied).
 *
 * @returns what was read, or `undefined` for a reply of another shape.
 */
export function readChanges(reply: unknown): ChangesRead | undefined {
  if (!Array.isArray(reply) || reply.length < 2) return undefined;
  const epoch = String(reply[1] ?? '');
  if (reply.length === 2) return { kind: 'same', epoch };
  const version = Number(reply[0]);
  if (reply[2] === 'delta') {
    const ids = reply[3] as unknown[];
    const vals = reply[4] as unknown[];
    const deltas: OverrideDelta[] = [];
    for (let i = 0; i < ids.length; i++) {
      const text = vals[i];
      const rule = typeof text === 'string' ? readStoredOverride(parse(text)) : undefined;
      deltas.push({ id: String(ids[i]), rule });
    }
    return { kind: 'delta', version, epoch, deltas };
  }
  const flat = reply[3] as unknown[];
  const rules: OverrideRule[] = [];
  for (let i = 1; i < flat.length; i += 2) {
    const r = readStoredOverride(parse(String(flat[i])));
    if (r !== undefined) rules.push(r);
  }
  return { kind: 'all', version, epoch, rules };
}

function parse(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}
