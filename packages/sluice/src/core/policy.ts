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

/** What a caller passes to {@link definePolicy}. */
export interface PolicyOptions {
  /** The policy's name, used in headers (`"rl.write";q=120;w=60`), metrics and keys. */
  readonly name: string;
  /** Quota q: tokens added per window. Integer >= 1. */
  readonly quota: number;
  /** Window w in whole seconds (per minute means 60). Integer >= 1. */
  readonly window: number;
  /** Capacity B of the bucket, the largest burst. Integer >= 1; defaults to `quota`. */
  readonly burst?: number;
  /** Decide and report, never deny (to try a policy on live traffic). Defaults to false. */
  readonly shadow?: boolean;
  /** Allow waiting for tokens within these bounds; absent means waits are refused at once. */
  readonly queue?: QueueOptions;
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
  /** Elapsed time beyond which any bucket of this policy is full; caps the product elapsed x quota below 2^53. */
  readonly fillMs: number;
}

const KNOWN = ['name', 'quota', 'window', 'burst', 'shadow', 'queue'];

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
  rejectUnknownKeys(path, o, KNOWN);
  const name = stringOption(`${path}.name`, o.name);
  const quota = integerOption(`${path}.quota`, o.quota, 1);
  const window = integerOption(`${path}.window`, o.window, 1);
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
  // Every intermediate (capacity plus debt plus one millisecond of refill) must stay an exact integer in a double.
  if (capacityUnits + debtUnits + quota > Number.MAX_SAFE_INTEGER) {
    throw invalidOption(
      `${path}.burst`,
      `small enough that (burst + queue.limit) x window x 1000 stays below 2^53`,
      burst,
    );
  }
  return Object.freeze({
    name,
    quota,
    window,
    burst,
    shadow,
    queue,
    unitsPerToken,
    capacityUnits,
    refillPerMs: quota,
    refillPerSecond: quota * 1000,
    debtUnits,
    fillMs: Math.ceil((capacityUnits + debtUnits) / quota),
  });
}
