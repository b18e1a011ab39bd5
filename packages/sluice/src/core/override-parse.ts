/**
 * Reading overrides in: what an operator asks for through the admin API or the CLI (`parseOverride`), and what a
 * store kept as JSON (`readStoredOverride`). Both refuse a malformed rule rather than apply it.
 */
import { keyAsPattern } from './key-pattern.js';
import { integerOption, invalidOption, objectOption, rejectUnknownKeys } from './options.js';
import { MAX_OVERRIDE_SECONDS, type OverrideRule, overrideId } from './override.js';
import { checkOverrideReason } from './override-reason.js';
import { parseZonedTime } from './zoned-time.js';

/** The largest time a `Date` holds, in epoch milliseconds (ECMAScript: 8.64e15, 100,000,000 days). */
const MAX_DATE_MS = 8.64e15;

/** What a caller gives to set a rule: {@link OverrideRule} without the fields the gateway fills in. */
export interface OverrideInput {
  readonly pattern?: unknown;
  readonly policy?: unknown;
  readonly tier?: unknown;
  readonly quota?: unknown;
  readonly burst?: unknown;
  readonly window?: unknown;
  readonly unlimited?: unknown;
  readonly block?: unknown;
  readonly expiresAt?: unknown;
  readonly ttlSeconds?: unknown;
  readonly reason?: unknown;
}

const INPUT_KEYS = [
  'pattern',
  'policy',
  'tier',
  'quota',
  'burst',
  'window',
  'unlimited',
  'block',
  'expiresAt',
  'ttlSeconds',
  'reason',
];

/** Longest pattern, reason and author accepted: they are stored and shown, never unbounded. */
const MAX_PATTERN = 512;
const MAX_SCOPE = 200;

/**
 * Checks a pattern's shape: printable, bounded, a `*` only at the end after a non-empty prefix, and never a
 * pattern that matches every key (`*`, `:*`). Addresses and ranges (`ip:`) are checked by `sluice/http`.
 *
 * @throws SluiceError `ERR_INVALID_OPTION` naming `pattern`.
 */
export function checkOverridePattern(pattern: unknown): string {
  if (typeof pattern !== 'string' || pattern.length === 0 || pattern.length > MAX_PATTERN) {
    throw invalidOption('pattern', `a key pattern of 1 to ${MAX_PATTERN} characters`, pattern);
  }
  if (!/^[\x21-\x7e]+$/.test(pattern)) {
    // Keys may hold such characters (identities come from tokens and headers); patterns write them escaped.
    const written = keyAsPattern(pattern);
    const hint = written === undefined ? '' : ` (${written})`;
    throw invalidOption(
      'pattern',
      `printable ASCII, with a space, a control or a non-ASCII character of a key written %XX, the bytes of its UTF-8 form${hint}`,
      pattern,
    );
  }
  const star = pattern.indexOf('*');
  if (star >= 0 && star !== pattern.length - 1) {
    throw invalidOption('pattern', 'a key, a tenant or a prefix with "*" only at the end', pattern);
  }
  if (star >= 0 && /^[:*]*$/.test(pattern)) {
    throw invalidOption('pattern', 'a pattern narrower than every key (a prefix before "*")', pattern);
  }
  return pattern;
}

function scope(option: string, value: unknown): string | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== 'string' || value.length === 0 || value.length > MAX_SCOPE) {
    throw invalidOption(option, `a name of 1 to ${MAX_SCOPE} characters`, value);
  }
  return value;
}

/**
 * Validates what an operator asked for and builds the rule. Exactly one effect: sizes (`quota`, optional
 * `burst`, `window`), `unlimited: true`, or `block: 403 | 429`. A 429 block needs an end, since its Retry-After
 * says when to come back. Policy and tier names are checked against the configuration by the caller.
 *
 * @param input - the request body.
 * @param nowMs - the wall clock in epoch milliseconds (expiries must be later).
 * @param author - who sets it.
 * @returns the frozen rule.
 * @throws SluiceError `ERR_INVALID_OPTION` whose `details.option` names the field.
 */
export function parseOverride(input: unknown, nowMs: number, author: string): OverrideRule {
  const o = objectOption('body', input) as OverrideInput;
  rejectUnknownKeys('body', o, INPUT_KEYS);
  const pattern = checkOverridePattern(o.pattern);
  const policy = scope('policy', o.policy);
  const tier = scope('tier', o.tier);
  if (policy !== undefined && tier !== undefined) {
    throw invalidOption(
      'tier',
      'absent when policy is given (a rule scopes to one policy or one tier)',
      tier,
    );
  }
  const sized = o.quota !== undefined || o.burst !== undefined || o.window !== undefined;
  const effects = (sized ? 1 : 0) + (o.unlimited !== undefined ? 1 : 0) + (o.block !== undefined ? 1 : 0);
  if (effects !== 1) {
    throw invalidOption(
      'quota',
      'exactly one of: quota and window (with an optional burst), unlimited: true, block: 403 or 429',
      effects === 0 ? undefined : 'several',
    );
  }
  let expiresAt: number | undefined;
  if (o.expiresAt !== undefined && o.ttlSeconds !== undefined) {
    throw invalidOption('ttlSeconds', 'absent when expiresAt is given', o.ttlSeconds);
  }
  if (o.ttlSeconds !== undefined) {
    expiresAt = nowMs + integerOption('ttlSeconds', o.ttlSeconds, 1, MAX_OVERRIDE_SECONDS) * 1000;
  } else if (o.expiresAt !== undefined) {
    const at = typeof o.expiresAt === 'string' ? parseZonedTime(o.expiresAt) : o.expiresAt;
    if (typeof at !== 'number' || !Number.isFinite(at)) {
      throw invalidOption(
        'expiresAt',
        'an ISO 8601 date-time with Z or an offset from UTC (2030-01-01T00:00:00Z), or epoch milliseconds',
        o.expiresAt,
      );
    }
    if (at <= nowMs) {
      throw invalidOption(
        'expiresAt',
        `a time in the future (now is ${new Date(nowMs).toISOString()})`,
        o.expiresAt,
      );
    }
    // The same bound as ttlSeconds: an end past what a Date can hold failed every request the rule matched.
    if (at > nowMs + MAX_OVERRIDE_SECONDS * 1000) {
      throw invalidOption(
        'expiresAt',
        `at most ${MAX_OVERRIDE_SECONDS / 86400} days from now (until ${new Date(nowMs + MAX_OVERRIDE_SECONDS * 1000).toISOString()})`,
        o.expiresAt,
      );
    }
    expiresAt = Math.ceil(at);
  }
  const reason = checkOverrideReason(o.reason);
  const base = {
    id: overrideId(pattern, policy, tier),
    pattern,
    ...(policy === undefined ? {} : { policy }),
    ...(tier === undefined ? {} : { tier }),
  };
  const tail = {
    ...(expiresAt === undefined ? {} : { expiresAt }),
    reason,
    author,
    createdAt: nowMs,
  };
  if (o.unlimited !== undefined) {
    if (o.unlimited !== true) throw invalidOption('unlimited', 'true', o.unlimited);
    return Object.freeze({ ...base, effect: 'unlimited' as const, ...tail });
  }
  if (o.block !== undefined) {
    if (o.block !== 403 && o.block !== 429) throw invalidOption('block', '403 or 429', o.block);
    if (o.block === 429 && expiresAt === undefined) {
      throw invalidOption(
        'expiresAt',
        'set for a 429 block (its Retry-After counts down to the end)',
        undefined,
      );
    }
    return Object.freeze({ ...base, effect: 'block' as const, status: o.block, ...tail });
  }
  const quota = integerOption('quota', o.quota, 1, 1e9);
  const window = integerOption('window', o.window, 1, MAX_OVERRIDE_SECONDS);
  const burst = integerOption('burst', o.burst, 1, 1e9, quota);
  return Object.freeze({ ...base, effect: 'limit' as const, quota, burst, window, ...tail });
}

/**
 * Reads a stored rule back (from JSON a store kept), refusing anything malformed rather than applying it.
 *
 * @returns the rule, or `undefined` when the value is not a rule.
 */
export function readStoredOverride(value: unknown): OverrideRule | undefined {
  if (typeof value !== 'object' || value === null) return undefined;
  const r = value as Record<string, unknown>;
  if (typeof r.id !== 'string' || typeof r.pattern !== 'string') return undefined;
  if (r.effect !== 'limit' && r.effect !== 'unlimited' && r.effect !== 'block') return undefined;
  if (r.effect === 'limit' && !(isSize(r.quota) && isSize(r.burst) && isSize(r.window))) return undefined;
  if (r.effect === 'block' && r.status !== 403 && r.status !== 429) return undefined;
  // An end a Date cannot hold (a rule stored before ends were bounded) would fail every request it matched.
  if (r.expiresAt !== undefined && !(typeof r.expiresAt === 'number' && Math.abs(r.expiresAt) <= MAX_DATE_MS))
    return undefined;
  return Object.freeze(r as unknown as OverrideRule);
}

function isSize(v: unknown): boolean {
  return typeof v === 'number' && Number.isInteger(v) && v >= 1;
}
