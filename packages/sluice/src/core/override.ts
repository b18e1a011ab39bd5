import { describeValue } from './options.js';
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
 * (`tenant:acme`: every key of that tenant, and in `sluice/http` every request whose identity names the tenant,
 * whatever its key: an address, an API key), a prefix ending in `*` (`tenant:acme:client:*`) or an address range
 * (`ip:10.0.0.0/8`, matched against the client IP). A single address (`ip:203.0.113.9`, `ip:2001:db8::1`) is
 * matched against the client IP too, whatever the bucket key (an IPv6 client's key is its /64);
 * `canonicalOverridePattern` in `sluice/http` writes a pattern in one form per rule and refuses one that names no
 * request.
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
