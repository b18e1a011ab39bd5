import { concurrencyOptions } from './concurrency-policy.js';
import {
  booleanOption,
  integerOption,
  invalidOption,
  objectOption,
  rejectUnknownKeys,
  stringOption,
} from './options.js';

/** Optional waiting instead of rejecting: how much a key may owe and for how long a caller may wait. */
export interface QueueOptions {
  /** Tokens that may be reserved ahead of the refill (like .NET's QueueLimit). Integer >= 1. */
  readonly limit: number;
  /** The longest a caller waits for its tokens, in milliseconds. Integer >= 0. */
  readonly maxWaitMs: number;
}

/**
 * Stepped refill: `tokens` whole tokens every `every` seconds instead of a continuous trickle, like .NET's
 * TokenBucketRateLimiter with AutoReplenishment. Steps follow each bucket's own timeline: the first comes `every`
 * seconds after a take left the bucket short of full (see docs/DECISIONS.md, "Stepped refill").
 */
export interface RefillOptions {
  /** Tokens added at each step. Integer >= 1. */
  readonly tokens: number;
  /** Seconds between steps. Integer >= 1. */
  readonly every: number;
}

/** What a caller passes to {@link definePolicy}. */
export interface PolicyOptions {
  /** The policy's name, used in headers (`"rl.write";q=120;w=60`), metrics and keys. */
  readonly name: string;
  /** Quota q: tokens added per window. Integer >= 1; with `refill`, defaults to (and must equal) `refill.tokens`. */
  readonly quota?: number;
  /** Window w in whole seconds (per minute means 60). Integer >= 1; with `refill`, `refill.every`. */
  readonly window?: number;
  /** Refill in steps (`{ tokens: 5, every: 10 }`); absent means a continuous refill of quota / window per second. */
  readonly refill?: RefillOptions;
  /** Capacity B of the bucket, the largest burst. Integer >= 1; defaults to `quota`. */
  readonly burst?: number;
  /** Decide and report, never deny (to try a policy on live traffic). Defaults to false. */
  readonly shadow?: boolean;
  /** Allow waiting for tokens within these bounds; absent means waits are refused at once. */
  readonly queue?: QueueOptions;
  /**
   * Counts requests in flight instead of requests per window: at most this many per key at once (integer >= 1),
   * each held until its response ends. Excludes `quota`, `window`, `burst`, `refill` and `queue`.
   */
  readonly concurrent?: number;
  /** With `concurrent`: the `Retry-After` seconds a refusal suggests (integer >= 1, default 1). */
  readonly retryAfter?: number;
}

/**
 * A validated, frozen policy with its fixed-point constants precomputed.
 *
 * Tokens are held in integer units of `1 / (window * 1000)` token, so one millisecond of refill adds exactly
 * `quota` units: refill, consumption and every header value are integer arithmetic, exact in a double up to 2^53,
 * and repeated refills never drift (see docs/DECISIONS.md, "Fixed-point tokens").
 */
export interface Policy {
  readonly name: string;
  readonly quota: number;
  readonly window: number;
  readonly burst: number;
  readonly shadow: boolean;
  readonly queue: QueueOptions | undefined;
  /** The stepped refill, or `undefined` for a continuous one. */
  readonly refill: RefillOptions | undefined;
  /** Milliseconds between refill steps; 0 for a continuous refill (the one flag the hot path checks). */
  readonly stepMs: number;
  /** Units added per step: `refill.tokens * unitsPerToken`; 0 for a continuous refill. */
  readonly stepUnits: number;
  /** Units per whole token: `window * 1000`. */
  readonly unitsPerToken: number;
  /** Capacity in units: `burst * unitsPerToken`. */
  readonly capacityUnits: number;
  /** Units added per millisecond: equal to `quota`. */
  readonly refillPerMs: number;
  /** Units that refill in one second: `quota * 1000`; divides a deficit into seconds. */
  readonly refillPerSecond: number;
  /** Units a bucket may owe through reservations: `queue.limit * unitsPerToken`, 0 without a queue. */
  readonly debtUnits: number;
  /**
   * Units a bucket may owe after a cost settled from a response (see core/settle-math.ts): one burst, less only
   * for a policy so large that one burst more would leave exact integers.
   */
  readonly settleDebtUnits: number;
  /** Elapsed time beyond which any bucket of this policy is full; caps the product elapsed x quota below 2^53. */
  readonly fillMs: number;
  /**
   * The name stores that key buckets by name (Redis) use instead of `name`: set only by {@link overridePolicy},
   * so an overridden policy keeps its name in headers and bodies while its buckets stay apart from the base's.
   */
  readonly bucketName?: string;
  /** Slots of a concurrency policy (requests in flight per key); 0 for a rate policy. */
  readonly concurrent: number;
  /** The `Retry-After` seconds a concurrency policy's refusal suggests; 0 for a rate policy. */
  readonly retryAfterHint: number;
}

const KNOWN = ['name', 'quota', 'window', 'burst', 'shadow', 'queue', 'refill'];

/**
 * Validates policy options and returns a frozen {@link Policy}.
 *
 * @param options - the policy's name, quota per window, burst and optional shadow and queue settings.
 * @param path - the option path used in error messages, for example `policies[2]`.
 * @returns the frozen policy with its fixed-point constants.
 * @throws SluiceError `ERR_INVALID_OPTION` naming the option, the expectation and the given value.
 *
 * @example
 * ```ts
 * const write = definePolicy({ name: 'rl.write', quota: 120, window: 60, burst: 30 });
 * ```
 */
export function definePolicy(options: PolicyOptions, path = 'policy'): Policy {
  const o = objectOption(path, options);
  if (o.concurrent !== undefined) return concurrencyPolicy(o, path);
  rejectUnknownKeys(path, o, KNOWN);
  const name = stringOption(`${path}.name`, o.name);
  const refill = refillOption(path, o.refill);
  const quota = sizeOption(`${path}.quota`, o.quota, refill?.tokens, 'refill.tokens');
  const window = sizeOption(`${path}.window`, o.window, refill?.every, 'refill.every');
  const burst = integerOption(`${path}.burst`, o.burst, 1, Number.MAX_SAFE_INTEGER, quota);
  const shadow = booleanOption(`${path}.shadow`, o.shadow, false);
  let queue: QueueOptions | undefined;
  if (o.queue !== undefined) {
    const q = objectOption(`${path}.queue`, o.queue);
    rejectUnknownKeys(`${path}.queue`, q, ['limit', 'maxWaitMs']);
    queue = Object.freeze({
      limit: integerOption(`${path}.queue.limit`, q.limit, 1),
      maxWaitMs: integerOption(`${path}.queue.maxWaitMs`, q.maxWaitMs, 0),
    });
  }
  const unitsPerToken = window * 1000;
  const capacityUnits = burst * unitsPerToken;
  const debtUnits = (queue?.limit ?? 0) * unitsPerToken;
  const stepMs = refill === undefined ? 0 : window * 1000;
  const stepUnits = refill === undefined ? 0 : quota * unitsPerToken;
  // Every intermediate (capacity plus debt plus one millisecond or one step of refill) must stay an exact integer.
  const room = Number.MAX_SAFE_INTEGER - (capacityUnits + debtUnits + Math.max(quota, stepUnits));
  if (room < 0) {
    throw invalidOption(
      `${path}.burst`,
      `small enough that (burst + queue.limit) x window x 1000 stays below 2^53`,
      burst,
    );
  }
  const settleDebtUnits = Math.min(capacityUnits, room);
  // The deepest a bucket can be: a queue's debt, or a settled cost's.
  const deepest = Math.max(debtUnits, settleDebtUnits);
  return Object.freeze({
    name,
    quota,
    window,
    burst,
    shadow,
    queue,
    refill,
    stepMs,
    stepUnits,
    unitsPerToken,
    capacityUnits,
    refillPerMs: quota,
    refillPerSecond: quota * 1000,
    debtUnits,
    settleDebtUnits,
    // Stepped: the steps that fill the bucket from the deepest debt, so elapsed x rate stays below 2^53 too.
    fillMs:
      stepMs === 0
        ? Math.ceil((capacityUnits + deepest) / quota)
        : Math.ceil((capacityUnits + deepest) / stepUnits) * stepMs,
    concurrent: 0,
    retryAfterHint: 0,
  });
}

/**
 * A concurrency policy: a bucket of `concurrent` tokens that never refills (D-G89). Admission takes a token in the
 * same `decide` as the request's rate policies; the end of the response gives it back (`refund`, never above the
 * slots). One token is 1000 units, as for a one-second window, so the arithmetic stays the rate policies'.
 */
function concurrencyPolicy(o: Record<string, unknown>, path: string): Policy {
  const shadow = booleanOption(`${path}.shadow`, o.shadow, false);
  const { name, slots, retryAfter } = concurrencyOptions(o, path);
  return Object.freeze({
    name,
    quota: slots,
    window: 1,
    burst: slots,
    shadow,
    queue: undefined,
    refill: undefined,
    stepMs: 0,
    stepUnits: 0,
    unitsPerToken: 1000,
    capacityUnits: slots * 1000,
    refillPerMs: 0,
    refillPerSecond: 0,
    debtUnits: 0,
    settleDebtUnits: 0,
    // Never full by time: only its releases fill it (and then it is dropped like any full bucket).
    fillMs: Number.MAX_SAFE_INTEGER,
    concurrent: slots,
    retryAfterHint: retryAfter,
  });
}

function refillOption(path: string, value: unknown): RefillOptions | undefined {
  if (value === undefined) return undefined;
  const r = objectOption(`${path}.refill`, value);
  rejectUnknownKeys(`${path}.refill`, r, ['tokens', 'every']);
  return Object.freeze({
    tokens: integerOption(`${path}.refill.tokens`, r.tokens, 1),
    every: integerOption(`${path}.refill.every`, r.every, 1),
  });
}

/** Quota or window: required without `refill`, and with it either left out or equal to what `refill` says. */
function sizeOption(option: string, value: unknown, implied: number | undefined, from: string): number {
  if (implied === undefined) return integerOption(option, value, 1);
  if (value !== undefined && value !== implied) {
    throw invalidOption(option, `equal to ${from} (${implied}) or left out`, value);
  }
  return implied;
}

/** Override sizes for one base policy, by `quota/window/burst`: equal overrides share one policy object. */
const overrides = new WeakMap<Policy, Map<string, Policy>>();

/**
 * A policy with the name of `base` and other sizes, for run-time overrides. Its buckets are its own, even with
 * the sizes of `base` (the memory store tells policies apart by object, the shared store and Redis by a
 * definition that names the `bucketName`), so an override starts from a full bucket and the base's buckets are
 * untouched when it ends. The override does not queue (a queue is
 * a property of the configured policy). Equal sizes give the same object, so stores meet few distinct policies.
 *
 * @param base - the configured policy.
 * @param sizes - the override's quota, window and burst (validated like {@link definePolicy}).
 * @returns the frozen policy.
 * @throws SluiceError `ERR_INVALID_OPTION` for invalid sizes.
 */
export function overridePolicy(
  base: Policy,
  sizes: { readonly quota: number; readonly window: number; readonly burst: number },
): Policy {
  const id = `${sizes.quota}/${sizes.window}/${sizes.burst}`;
  let byId = overrides.get(base);
  if (byId === undefined) {
    byId = new Map();
    overrides.set(base, byId);
  }
  let p = byId.get(id);
  if (p === undefined) {
    const defined = definePolicy({ name: base.name, shadow: base.shadow, ...sizes }, 'override');
    p = Object.freeze({ ...defined, bucketName: `${base.name}~${id}` });
    byId.set(id, p);
  }
  return p;
}
