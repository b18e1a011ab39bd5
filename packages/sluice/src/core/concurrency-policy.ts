import { integerOption, invalidOption, rejectUnknownKeys, stringOption } from './options.js';

/** The options a concurrency policy takes: a name, the slots, and what a refusal tells the client. */
const KNOWN = ['name', 'concurrent', 'retryAfter', 'shadow'];
/** Rate options a concurrency policy refuses, named in the error: they describe a window it does not have. */
const RATE_ONLY = ['quota', 'window', 'burst', 'refill', 'queue'];

/** The checked options of a concurrency policy. */
export interface ConcurrencyOptions {
  readonly name: string;
  /** Slots per key, integer >= 1. */
  readonly slots: number;
  /** `Retry-After` seconds of a refusal, integer >= 1 (default 1). */
  readonly retryAfter: number;
}

/**
 * Checks the options of a concurrency policy (`concurrent` given): `concurrent` slots per key, counting requests
 * in flight instead of requests per window. A window option beside `concurrent` is refused, since a count of
 * requests in flight has no window. `definePolicy` builds the policy: a bucket of `concurrent` tokens that never
 * refills (D-G89).
 *
 * @param o - the options object (already checked to be one).
 * @param path - the option path used in error messages.
 * @throws SluiceError `ERR_INVALID_OPTION` naming the option, the expectation and the given value.
 */
export function concurrencyOptions(o: Record<string, unknown>, path: string): ConcurrencyOptions {
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
  return {
    name: stringOption(`${path}.name`, o.name),
    slots: integerOption(`${path}.concurrent`, o.concurrent, 1, 1_000_000),
    retryAfter: integerOption(`${path}.retryAfter`, o.retryAfter, 1, 86_400, 1),
  };
}
