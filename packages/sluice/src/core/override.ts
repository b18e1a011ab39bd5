import { keyAsPattern } from './key-pattern.js';
import { describeValue, integerOption, invalidOption, objectOption, rejectUnknownKeys } from './options.js';
import { checkOverrideReason } from './override-reason.js';
import type { MaybePromise } from './store.js';

/**
 * What an override does to the requests it matches: other sizes for a policy (`limit`), no limit at all
 * (`unlimited`), or a refusal with 403 or 429 until it ends (`block`).
 */
export type OverrideEffect = 'limit' | 'unlimited' | 'block';

/**
 * One run-time override or block, as stored and as the admin API shows it. Plain JSON: every store keeps it as
 * given, and each gateway compiles the current set into an index of its own.
 *
 * Patterns: an exact bucket key (`tenant:acme:client:web`, `ip:203.0.113.9`, `apikey:<hash>`), a tenant
 * (`tenant:acme`: every key of that tenant), a prefix ending in `*` (`tenant:acme:client:*`) or an address range
 * (`ip:10.0.0.0/8`, matched against the client IP). A single IPv6 address (`ip:2001:db8::1`) is its /128 range,
 * since an IPv6 client's key is its /64; `canonicalOverridePattern` in `sluice/http` writes an address pattern as
 * the key it names and refuses one that names no request.
 */
export interface OverrideRule {
  /** Stable identity: the pattern and the scope; setting the same pattern and scope again replaces the rule. */
  readonly id: string;
  /** What it matches, as given. */
  readonly pattern: string;
  /** Only this policy's buckets; `undefined` for every policy (unless `tier` is set). */
  readonly policy?: string;
  /** Only requests of this tier; `undefined` for every tier. */
  readonly tier?: string;
  /** What it does. */
  readonly effect: OverrideEffect;
  /** For `limit`: tokens per window, integer >= 1. */
  readonly quota?: number;
  /** For `limit`: the bucket's capacity, integer >= 1 (default: the quota). */
  readonly burst?: number;
  /** For `limit`: the window in whole seconds, integer >= 1. */
  readonly window?: number;
  /** For `block`: the status the matched requests get (403, or 429 with Retry-After until the block ends). */
  readonly status?: 403 | 429;
  /** When the rule stops applying, in epoch milliseconds; `undefined` until removed. */
  readonly expiresAt?: number;
  /** Why, in the operator's words. */
  readonly reason: string;
  /** Who set it (the admin token's name, `penalty` for automatic blocks). */
  readonly author: string;
  /** When it was set, in epoch milliseconds. */
  readonly createdAt: number;
}

/** One change to the overrides, as the audit log and `GET /overrides/history` keep it. */
export interface OverrideChange {
  /** `set` for a new or replaced rule, `remove` for a removal. */
  readonly action: 'set' | 'remove';
  /** The rule's id. */
  readonly id: string;
  /** The rule as set (for `set`), or as it was before a removal when known. */
  readonly rule?: OverrideRule;
  /** Who made the change. */
  readonly who: string;
  /** When, in epoch milliseconds. */
  readonly at: number;
  /** Why. */
  readonly reason: string;
}

/**
 * The rules a gateway applies, as one immutable value: a store hands out the same snapshot object until the
 * rules change, so a decision compares one reference to know whether its compiled index is current.
 */
export interface OverrideSnapshot {
  /** Grows with every change. */
  readonly version: number;
  /** The rules, expired ones included until a write prunes them (a decision checks `expiresAt` itself). */
  readonly rules: readonly OverrideRule[];
  /**
   * The rules set and removed since the snapshot of `version`, oldest first, or `undefined` when they are not
   * known (a store that keeps no log, a version too old): a reader then updates its compiled index with these
   * alone instead of compiling every rule again.
   */
  changesSince?(
    version: number,
  ): readonly { readonly id: string; readonly rule: OverrideRule | undefined }[] | undefined;
  /**
   * The rule of an id, looked up without a pass over the list (stores that keep rules by id); absent, find it in
   * `rules`. May show a later write than the snapshot's own (never an earlier one).
   */
  ruleOf?(id: string): OverrideRule | undefined;
}

/** The snapshot of a store that holds no rule yet (version 0). */
export const EMPTY_OVERRIDES: OverrideSnapshot = Object.freeze({ version: 0, rules: Object.freeze([]) });

/** The history kept per store: the most recent changes of operators (every change not written as automatic). */
export const OVERRIDE_HISTORY_LIMIT = 1000;

/**
 * The automatic changes (the gateway's penalty blocks) kept per store, apart from the operators' ones: a flood of
 * automatic blocks (one per anonymous client) never pushes an operator's change out of the history.
 */
export const AUTOMATIC_HISTORY_LIMIT = 1000;

/** How {@link OverrideStore.set} writes a rule. */
export interface OverrideWriteOptions {
  /**
   * True for a rule set by the software rather than by an operator (the gateway's penalty blocks). Such a rule
   * never replaces a rule in force with the same id set by another author: an operator's block or limit on that
   * key stays exactly as the operator set it (the check and the write are one step in every store). Its change
   * goes to the automatic history ({@link AUTOMATIC_HISTORY_LIMIT}), not the operators' one.
   */
  readonly automatic?: boolean;
}

/**
 * The longest an override lasts (`ttlSeconds`) and the longest window an override policy has: 366 days, in
 * seconds. Whatever sets overrides on its own (the gateway's automatic blocks) keeps to it when its configuration
 * is read, not when a block is due.
 */
export const MAX_OVERRIDE_SECONDS = 366 * 86400;

/** The largest time a `Date` holds, in epoch milliseconds (ECMAScript: 8.64e15, 100,000,000 days). */
const MAX_DATE_MS = 8.64e15;

/**
 * Where overrides live: beside the buckets, so that every gateway (Redis) or every thread (the shared table)
 * sees a change. `snapshot()` is synchronous and cheap (a decision calls it); remote stores refresh it in the
 * background.
 */
export interface OverrideStore {
  /** `memory`, `shared` or `redis`. */
  readonly kind: string;
  /** The rules known here now. */
  snapshot(): OverrideSnapshot;
  /**
   * False while the rules are not known: a remote store that has not read them since it was opened (its
   * `snapshot()` is empty then, which is not the same as no rule). Absent means known (in process).
   */
  readonly loaded?: boolean;
  /**
   * Sets (adds or replaces) a rule and appends the change to the history, in one step.
   *
   * @param options - `automatic: true` for a rule no operator set (see {@link OverrideWriteOptions}).
   * @returns false when an automatic rule left another author's rule in place, true (or `undefined`, from a store
   * that knows no automatic rules) when written.
   * @throws SluiceError `ERR_STORE_UNAVAILABLE` when a remote store cannot be written, `ERR_OVERRIDES_FULL` when
   * the rules no longer fit.
   */
  set(
    rule: OverrideRule,
    change: OverrideChange,
    options?: OverrideWriteOptions,
  ): Promise<boolean | undefined>;
  /**
   * Removes a rule and appends the change to the history.
   *
   * @returns the removed rule, or `undefined` when none had the id (nothing is recorded then).
   */
  remove(id: string, change: OverrideChange): Promise<OverrideRule | undefined>;
  /**
   * The most recent changes, oldest first: the last {@link OVERRIDE_HISTORY_LIMIT} of operators and the last
   * {@link AUTOMATIC_HISTORY_LIMIT} automatic ones, merged by time.
   */
  history(): Promise<readonly OverrideChange[]>;
  /** Reads the current rules now (remote stores; a no-op in process). */
  refresh(): MaybePromise<void>;
  /** Stops background refreshes. */
  close(): void;
}

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
 * The id of a rule: its pattern and scope. Two rules with the same id cannot coexist; setting one replaces the
 * other, which is what an operator raising a customer's limit twice expects.
 *
 * @param pattern - the rule's pattern.
 * @param policy - the policy scope, if any.
 * @param tier - the tier scope, if any.
 */
export function overrideId(pattern: string, policy?: string, tier?: string): string {
  if (policy !== undefined) return `${pattern} policy=${policy}`;
  if (tier !== undefined) return `${pattern} tier=${tier}`;
  return pattern;
}

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
    const at = typeof o.expiresAt === 'string' ? Date.parse(o.expiresAt) : o.expiresAt;
    if (typeof at !== 'number' || !Number.isFinite(at)) {
      throw invalidOption('expiresAt', 'an ISO 8601 time or epoch milliseconds', o.expiresAt);
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

/** The rules still in force at `nowMs` (for listings and for pruning on write). */
export function liveOverrides(rules: readonly OverrideRule[], nowMs: number): OverrideRule[] {
  return rules.filter((r) => r.expiresAt === undefined || r.expiresAt > nowMs);
}

/**
 * The rules after setting `rule`: any rule with the same id replaced, expired rules dropped. Every store writes
 * through here, so they prune alike.
 */
export function withOverride(
  rules: readonly OverrideRule[],
  rule: OverrideRule,
  nowMs: number,
): OverrideRule[] {
  const out = liveOverrides(rules, nowMs).filter((r) => r.id !== rule.id);
  out.push(rule);
  return out;
}

/** The history after appending a change, keeping the last {@link OVERRIDE_HISTORY_LIMIT}. */
export function withChange(history: readonly OverrideChange[], change: OverrideChange): OverrideChange[] {
  const out =
    history.length >= OVERRIDE_HISTORY_LIMIT
      ? history.slice(history.length - OVERRIDE_HISTORY_LIMIT + 1)
      : history.slice();
  out.push(change);
  return out;
}

/**
 * True when an automatic `rule` must leave `existing` (the rule of the same id, if any) in place: it is in force
 * at `nowMs` and another author set it. Every store decides through here, in the step that writes.
 */
export function keepsOverride(
  existing: OverrideRule | undefined,
  rule: OverrideRule,
  nowMs: number,
): boolean {
  return (
    existing !== undefined &&
    existing.author !== rule.author &&
    (existing.expiresAt === undefined || existing.expiresAt > nowMs)
  );
}

/** The automatic history after appending a change, keeping the last {@link AUTOMATIC_HISTORY_LIMIT}. */
export function withAutomaticChange(
  history: readonly OverrideChange[],
  change: OverrideChange,
): OverrideChange[] {
  const out = history.slice(Math.max(0, history.length - AUTOMATIC_HISTORY_LIMIT + 1));
  out.push(change);
  return out;
}

/** The operators' and the automatic changes as one history, oldest first (an operator's first at a tie). */
export function mergeHistories(
  operators: readonly OverrideChange[],
  automatic: readonly OverrideChange[],
): OverrideChange[] {
  if (automatic.length === 0) return operators.slice();
  const out: OverrideChange[] = [];
  let i = 0;
  let j = 0;
  while (i < operators.length || j < automatic.length) {
    if (j >= automatic.length || (i < operators.length && operators[i].at <= automatic[j].at))
      out.push(operators[i++]);
    else out.push(automatic[j++]);
  }
  return out;
}

/** What a rule does, in a few words: `block 429`, `unlimited`, `quota 600 burst 20 window 60s`. */
export function describeEffect(
  rule: Pick<OverrideRule, 'effect' | 'status' | 'quota' | 'burst' | 'window'>,
): string {
  if (rule.effect === 'block') return `block ${rule.status}`;
  if (rule.effect === 'unlimited') return 'unlimited';
  return `quota ${rule.quota} burst ${rule.burst} window ${rule.window}s`;
}

/** A short text of a rule for log lines and messages. */
export function describeOverride(rule: OverrideRule): string {
  const what = describeEffect(rule);
  return `${rule.id}: ${what}${rule.expiresAt === undefined ? '' : ` until ${new Date(rule.expiresAt).toISOString()}`} (${describeValue(rule.reason)})`;
}
