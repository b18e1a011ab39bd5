import { integerOption, invalidOption, rejectUnknownKeys, stringOption } from './options.js';
import type { Policy } from './policy.js';

/** The options a concurrency policy takes: a name, the slots, and what a refusal tells the client. */
const KNOWN = ['name', 'concurrent', 'retryAfter', 'shadow'];
/** Rate options a concurrency policy refuses, named in the error: they describe a window it does not have. */
const RATE_ONLY = ['quota', 'window', 'burst', 'refill', 'queue'];

/**
 * A concurrency policy: `concurrent` slots per key, counting requests in flight instead of requests per window.
 * It is a bucket of `concurrent` tokens that never refills: admission takes a token (all or nothing with the
 * request's rate policies, in the same `decide`), and the end of the response gives it back (`refund`, never
 * above the burst). Every store that keeps token buckets keeps it as they are, with the same arithmetic.
 *
 * @param o - the options object (already checked to be one).
 * @param path - the option path used in error messages.
 * @param shadow - the policy's `shadow` flag, already read.
 * @throws SluiceError `ERR_INVALID_OPTION` naming the option, the expectation and the given value; a window
 *   option beside `concurrent` is refused, since a count of requests in flight has no window.
 */
export function defineConcurrencyPolicy(o: Record<string, unknown>, path: string, shadow: boolean): Policy {
  for (const k of RATE_ONLY) {
    if (o[k] !== undefined) {
      throw invalidOption(
        `${path}.${k}`,
        `absent beside concurrent (a count of requests in flight has no ${k}; use a separate rate policy)`,
        o[k],
      );
    }
  }
  rejectUnknownKeys(path, o, KNOWN);
  const name = stringOption(`${path}.name`, o.name);
  const slots = integerOption(`${path}.concurrent`, o.concurrent, 1, 1_000_000);
  const retryAfter = integerOption(`${path}.retryAfter`, o.retryAfter, 1, 86_400, 1);
  // One token is 1000 units, as for a one-second window: the arithmetic stays the rate policies'.
  const unitsPerToken = 1000;
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
    unitsPerToken,
    capacityUnits: slots * unitsPerToken,
    // Nothing refills: only a release gives a slot back.
    refillPerMs: 0,
    refillPerSecond: 0,
    debtUnits: 0,
    settleDebtUnits: 0,
    // A bucket with slots held is never full by time: only its releases make it full (and then it is dropped).
    fillMs: Number.MAX_SAFE_INTEGER,
    concurrent: slots,
    retryAfterHint: retryAfter,
  });
}
