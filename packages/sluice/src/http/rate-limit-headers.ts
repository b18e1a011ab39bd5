import { type BareItem, type Item, serializeItem, serializeList } from 'structured-headers';
import type { Decision, Policy, PolicyOutcome } from '../core/index.js';
import type { HeaderMode } from './header-mode.js';
import type { HeaderPair } from './types.js';

/** Canonical header names, shared so that every adapter writes the same bytes. */
export const HeaderName = Object.freeze({
  RateLimitPolicy: 'RateLimit-Policy',
  RateLimit: 'RateLimit',
  LegacyLimit: 'X-RateLimit-Limit',
  LegacyRemaining: 'X-RateLimit-Remaining',
  LegacyReset: 'X-RateLimit-Reset',
  LegacyPolicy: 'X-RateLimit-Policy',
  RetryAfter: 'Retry-After',
  ContentType: 'Content-Type',
  CacheControl: 'Cache-Control',
  ContentTypeOptions: 'X-Content-Type-Options',
});

/** The largest Integer a Structured Field may carry (RFC 9651, 3.3.1: at most 15 digits). */
export const SF_INTEGER_MAX = 999_999_999_999_999;

/** Clamps to a Structured Field Integer; engine values never get near it, a hostile policy still cannot break a header. */
export function sfInteger(n: number): number {
  if (!(n >= 0)) return 0;
  return n > SF_INTEGER_MAX ? SF_INTEGER_MAX : Math.floor(n);
}

/** Per-policy extras for the draft-11 fields. */
export interface DraftHeaderOptions {
  /**
   * Partition keys (`pk`, a Byte Sequence), one per policy or outcome in the same order, from
   * {@link partitionKeyOf}: a hash of the bucket key, never the key itself. `undefined` entries carry none.
   */
  readonly partitionKeys?: readonly (Uint8Array | undefined)[];
  /**
   * Quota units (`qu`), one per policy in the same order: `content-bytes` for a policy whose cost is the bytes of
   * the response; `undefined` entries are counted in requests, the draft's default, and carry none.
   */
  readonly quotaUnits?: readonly (string | undefined)[];
}

function params(entries: [string, BareItem][], pk: Uint8Array | undefined): Map<string, BareItem> {
  const m = new Map<string, BareItem>(entries);
  if (pk !== undefined) m.set('pk', pk as unknown as BareItem);
  return m;
}

/**
 * Formats `RateLimit-Policy` (draft-ietf-httpapi-ratelimit-headers-11): a Structured Field List with one String
 * item per enforcing policy, `q` the quota and `w` the window in seconds. Shadow policies are left out: they
 * never deny, so announcing them would mislead a client. Serialized by the `structured-headers` library.
 *
 * @param policies - the policies that apply to the request.
 * @param options - optional partition keys.
 * @returns the field value, for example `"rl.write";q=120;w=60`; empty when every policy is a shadow.
 * @throws SerializeError (from `structured-headers`) for a policy name outside printable ASCII; the HTTP
 * limiter rejects such names at construction.
 *
 * @example
 * ```ts
 * formatRateLimitPolicy([definePolicy({ name: 'rl.write', quota: 120, window: 60, burst: 30 })]);
 * // '"rl.write";q=120;w=60'
 * ```
 */
export function formatRateLimitPolicy(policies: readonly Policy[], options: DraftHeaderOptions = {}): string {
  const items: Item[] = [];
  policies.forEach((p, i) => {
    if (p.shadow) return;
    items.push([
      p.name,
      params(
        p.concurrent > 0
          ? concurrencyPolicyParams(p)
          : options.quotaUnits?.[i] === undefined
            ? [
                ['q', sfInteger(p.quota)],
                ['w', sfInteger(p.window)],
              ]
            : [
                ['q', sfInteger(p.quota)],
                ['qu', options.quotaUnits[i] as string],
                ['w', sfInteger(p.window)],
              ],
        options.partitionKeys?.[i],
      ),
    ]);
  });
  return serializeList(items);
}

/**
 * A concurrency policy's `RateLimit-Policy` parameters: `q` the slots in the draft's `concurrent-requests` unit,
 * and no `w`, since a count of requests in flight has no window.
 */
function concurrencyPolicyParams(p: Policy): [string, BareItem][] {
  return [
    ['q', sfInteger(p.quota)],
    ['qu', CONCURRENT_REQUESTS],
  ];
}

/** The draft's quota unit of a concurrency policy. */
const CONCURRENT_REQUESTS = 'concurrent-requests';

/**
 * Formats `RateLimit` (draft-11): one String item per enforcing policy with `r` the whole tokens left (floor)
 * and `t` the seconds until the bucket is full again (ceil), as the engine computed them.
 *
 * @param outcomes - the decision's outcomes (`decision.outcomes`).
 * @param options - optional partition keys.
 * @returns the field value, for example `"rl.write";r=29;t=1`.
 */
export function formatRateLimit(
  outcomes: readonly PolicyOutcome[],
  options: DraftHeaderOptions = {},
): string {
  const items: Item[] = [];
  outcomes.forEach((o, i) => {
    if (o.policy.shadow) return;
    items.push([
      o.policy.name,
      params(
        // A concurrency policy's slots come back when requests end, at no time it could tell: no `t`.
        o.policy.concurrent > 0
          ? [['r', sfInteger(o.remaining)]]
          : [
              ['r', sfInteger(o.remaining)],
              ['t', sfInteger(o.resetSeconds)],
            ],
        options.partitionKeys?.[i],
      ),
    ]);
  });
  return serializeList(items);
}

/**
 * The outcome the legacy headers and the problem body describe: among enforcing policies, a violated one with
 * the longest Retry-After; when nothing is violated, the one with the fewest whole tokens left (ties: the
 * longer reset). `undefined` when no enforcing policy applied.
 */
export function mostRestrictive(decision: Decision): PolicyOutcome | undefined {
  let best: PolicyOutcome | undefined;
  const list = decision.violated.length > 0 ? decision.violated : decision.outcomes;
  for (const o of list) {
    if (o.policy.shadow) continue;
    if (best === undefined) best = o;
    else if (decision.violated.length > 0) {
      if (o.retryAfterSeconds > best.retryAfterSeconds) best = o;
    } else if (
      o.remaining < best.remaining ||
      (o.remaining === best.remaining && o.resetSeconds > best.resetSeconds)
    ) {
      best = o;
    }
  }
  return best;
}

/**
 * The legacy `X-RateLimit-*` set of the design contract for the most restrictive policy: `Limit` the quota per
 * window, `Remaining` the whole tokens left, `Reset` the epoch second at which the bucket is full again, and
 * `Policy` the policy name.
 *
 * @param decision - the engine's decision.
 * @param nowMs - wall-clock milliseconds since the epoch (`Date.now()`); the engine's clock is monotonic and
 * cannot give epoch seconds.
 * @returns the four headers, or none when no enforcing policy applied.
 */
export function legacyRateLimitHeaders(decision: Decision, nowMs: number): HeaderPair[] {
  const o = mostRestrictive(decision);
  if (o === undefined) return [];
  return [
    [HeaderName.LegacyLimit, String(o.policy.quota)],
    [HeaderName.LegacyRemaining, String(o.remaining)],
    [HeaderName.LegacyReset, String(resetEpochSeconds(nowMs, o.resetSeconds))],
    [HeaderName.LegacyPolicy, legacyPolicyName(o.policy.name)],
  ];
}

/** Epoch second at which a bucket `resetSeconds` from now is full: rounded up, so it is never early. */
export function resetEpochSeconds(nowMs: number, resetSeconds: number): number {
  return Math.ceil(nowMs / 1000) + resetSeconds;
}

/**
 * A policy name as a plain header value. The HTTP limiter only admits printable ASCII names without outer
 * spaces; this guards the standalone helpers, which take any policy: other characters become `?`, outer spaces
 * go, and an empty result becomes `?`, since an empty field value would be dropped or rejected on the way.
 */
export function legacyPolicyName(name: string): string {
  const clean = (/^[\x20-\x7e]*$/.test(name) ? name : name.replace(/[^\x20-\x7e]/g, '?')).trim();
  return clean === '' ? '?' : clean;
}

/** Options of {@link formatDecisionHeaders}. */
export interface FormatHeadersOptions extends DraftHeaderOptions {
  /** Which headers to produce; default `draft-11`. */
  readonly mode?: HeaderMode;
  /** Wall-clock milliseconds for `X-RateLimit-Reset`; default `Date.now()`. */
  readonly nowMs?: number;
}

/**
 * Every rate-limit header for a decision, in the order adapters set them: draft-11 fields, legacy fields, and
 * `Retry-After` (delay-seconds, RFC 9110 10.2.3) when the decision denies, unless the request costs more than a
 * burst (no wait can admit it). The standalone form of what
 * {@link HttpLimiter} precomputes; the gateway may call it for decisions it makes itself.
 *
 * @param decision - the engine's decision.
 * @param options - header mode, clock and partition keys.
 * @returns the header pairs (possibly empty).
 *
 * @example
 * ```ts
 * const d = limiter.check('rl.write', 'user:42') as Decision;
 * formatDecisionHeaders(d, { mode: 'both' });
 * ```
 */
export function formatDecisionHeaders(decision: Decision, options: FormatHeadersOptions = {}): HeaderPair[] {
  const mode = options.mode ?? 'draft-11';
  const out: HeaderPair[] = [];
  // When the store could not decide, the bucket levels are unknown: the policies are still announced, the state
  // and the legacy levels are not (a store's placeholder outcomes would mislead).
  const known = decision.reason !== 'store_unavailable_open' && decision.reason !== 'store_unavailable';
  if (decision.outcomes.length > 0 && (mode === 'draft-11' || mode === 'both')) {
    const policy = formatRateLimitPolicy(
      decision.outcomes.map((o) => o.policy),
      options,
    );
    if (policy !== '') {
      out.push([HeaderName.RateLimitPolicy, policy]);
      if (known) out.push([HeaderName.RateLimit, formatRateLimit(decision.outcomes, options)]);
    }
  }
  if (known && (mode === 'legacy' || mode === 'both')) {
    out.push(...legacyRateLimitHeaders(decision, options.nowMs ?? Date.now()));
  }
  // A cost above a burst is never admitted, however long the client waits: no Retry-After to try again after.
  if (!decision.allowed && decision.reason !== 'cost_exceeds_burst')
    out.push([HeaderName.RetryAfter, String(Math.max(1, decision.retryAfterSeconds))]);
  return out;
}

/** The legacy header pairs of one policy that stay the same from answer to answer. */
export interface LegacyPairs {
  /** `X-RateLimit-Limit`: the policy's quota. */
  readonly limit: HeaderPair;
  /** `X-RateLimit-Policy`: the policy's name as a plain header value. */
  readonly policy: HeaderPair;
}

/**
 * The precomputed header parts for one list of policies, so that a request only concatenates integers: the
 * `RateLimit-Policy` value is constant per policy list, and each `RateLimit` item's name part is serialized
 * once. The property test holds the result equal to {@link formatRateLimit} and parseable by the library.
 */
export class HeaderPlan {
  /** The policies in header order (shadow policies included: they keep their place in the decision). */
  readonly policies: readonly Policy[];
  /** The constant `RateLimit-Policy` value; empty when every policy is a shadow. */
  readonly policyValue: string;
  /** The constant `RateLimit-Policy` header pair. */
  readonly policyPair: HeaderPair;
  readonly #prefixes: readonly (string | undefined)[];

  /** @param quotaUnits - per policy, its `qu` (`content-bytes`), or `undefined` for requests. */
  constructor(policies: readonly Policy[], quotaUnits?: readonly (string | undefined)[]) {
    this.policies = policies;
    this.policyValue = formatRateLimitPolicy(policies, { quotaUnits });
    this.policyPair = Object.freeze([HeaderName.RateLimitPolicy, this.policyValue] as const);
    // serializeItem quotes and escapes the name once; only r and t vary per request.
    this.#prefixes = policies.map((p) => (p.shadow ? undefined : `${serializeItem(p.name)};r=`));
  }

  /** The inputs and the value of the last {@link HeaderPlan.onePair}, and its pair once a value repeated. */
  #lastPolicy: Policy | undefined;
  #lastRemaining = -1;
  #lastReset = -1;
  #lastValue = '';
  #lastPair: HeaderPair | undefined;

  /**
   * The `RateLimit` pair of a decision over this plan's one policy, as {@link HeaderPlan.state} would give it
   * without the decision's outcome list (a one-policy decision builds that list only when read). While `r` and
   * `t` repeat, as they do across a flood of denials of one key, the same frozen pair comes back, so a denial
   * allocates neither the value nor the pair. A value that does not repeat (admissions counting down) costs what
   * it did: a string and a pair, never frozen.
   *
   * @param policy - the decision's policy, this plan's only one (not a shadow policy).
   * @param remaining - its `r`.
   * @param resetSeconds - its `t`.
   */
  onePair(policy: Policy, remaining: number, resetSeconds: number): HeaderPair {
    if (
      policy === this.#lastPolicy &&
      remaining === this.#lastRemaining &&
      resetSeconds === this.#lastReset
    ) {
      this.#lastPair ??= Object.freeze([HeaderName.RateLimit, this.#lastValue] as const);
      return this.#lastPair;
    }
    const prefix = this.#prefixes[0] as string;
    // A concurrency policy's item carries no `t` (its slots come back as responses end, not by time).
    const value =
      policy.concurrent > 0
        ? `${prefix}${sfInteger(remaining)}`
        : `${prefix}${sfInteger(remaining)};t=${sfInteger(resetSeconds)}`;
    this.#lastPolicy = policy;
    this.#lastRemaining = remaining;
    this.#lastReset = resetSeconds;
    this.#lastValue = value;
    this.#lastPair = undefined;
    return [HeaderName.RateLimit, value];
  }

  /** Per policy of this plan, its constant legacy pairs, made at its first legacy answer. */
  readonly #legacy = new Map<Policy, LegacyPairs>();
  #lastResetEpoch = -1;
  #lastResetPair: HeaderPair | undefined;

  /**
   * The legacy pairs of a policy of this plan that do not change from request to request (`X-RateLimit-Limit`
   * and `X-RateLimit-Policy`), frozen and shared: a legacy answer then makes only its remaining and reset values.
   *
   * @param policy - a policy of this plan.
   * @param names - the plan's `X-RateLimit-Policy` values by policy, if it has them; else the value is made from
   *   the policy's name (see {@link legacyPolicyName}). Read only the first time a policy is asked for.
   */
  legacyPairs(policy: Policy, names?: ReadonlyMap<Policy, string>): LegacyPairs {
    let pairs = this.#legacy.get(policy);
    if (pairs === undefined) {
      const name = names?.get(policy) ?? legacyPolicyName(policy.name);
      pairs = Object.freeze({
        limit: Object.freeze([HeaderName.LegacyLimit, String(policy.quota)] as const),
        policy: Object.freeze([HeaderName.LegacyPolicy, name] as const),
      });
      this.#legacy.set(policy, pairs);
    }
    return pairs;
  }

  /**
   * The `X-RateLimit-Reset` pair of an epoch second, shared while the second repeats (requests of one second of
   * one plan's mostly share it).
   *
   * @param epochSeconds - the reset time as Unix seconds ({@link resetEpochSeconds}).
   */
  legacyResetPair(epochSeconds: number): HeaderPair {
    if (epochSeconds !== this.#lastResetEpoch || this.#lastResetPair === undefined) {
      this.#lastResetEpoch = epochSeconds;
      this.#lastResetPair = Object.freeze([HeaderName.LegacyReset, String(epochSeconds)] as const);
    }
    return this.#lastResetPair;
  }

  /** The `RateLimit` value for outcomes decided over exactly these policies, in the same order. */
  state(outcomes: readonly PolicyOutcome[]): string {
    let s = '';
    for (let i = 0; i < outcomes.length; i++) {
      const prefix = this.#prefixes[i];
      if (prefix === undefined) continue;
      const o = outcomes[i];
      s +=
        o.policy.concurrent > 0
          ? `${s === '' ? '' : ', '}${prefix}${sfInteger(o.remaining)}`
          : `${s === '' ? '' : ', '}${prefix}${sfInteger(o.remaining)};t=${sfInteger(o.resetSeconds)}`;
    }
    return s;
  }
}
