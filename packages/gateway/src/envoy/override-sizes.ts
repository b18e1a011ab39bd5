import { RateLimitServiceError } from './rls-messages.js';

/** Units Envoy may name in a descriptor's limit override (`envoy.type.v3.RateLimitUnit`), in seconds. */
export const OVERRIDE_UNITS: Readonly<Record<string, number>> = Object.freeze({
  SECOND: 1,
  MINUTE: 60,
  HOUR: 3600,
  DAY: 86_400,
  WEEK: 604_800,
  MONTH: 2_592_000,
  YEAR: 31_536_000,
});

/** The largest `requests_per_unit` (a uint32 on the wire). */
export const MAX_REQUESTS_PER_UNIT = 4_294_967_295;

/** The policy sizes of a limit override, as {@link overrideSizes} reads it. */
export interface OverrideSizes {
  /** Tokens per window: the override's `requests_per_unit`, at least 1. */
  readonly quota: number;
  /** The unit in seconds. */
  readonly window: number;
  /** The bucket's capacity: `quota`, or less when a bucket cannot hold that many exactly. */
  readonly burst: number;
  /** True when the sizes are not the override as sent (a zero raised to 1, a burst bounded). */
  readonly adjusted: boolean;
}

/**
 * The token bucket of a descriptor's limit override (`requests_per_unit` per `unit`). An override is applied,
 * never dropped, as envoyproxy/ratelimit applies it: one Sluice cannot hold exactly is brought to the nearest one
 * it can, on the strict side, rather than answered with an error Envoy reads as "allow" (its `failure_mode_deny`
 * is off by default):
 *
 * - a burst of `quota` tokens whose fixed-point units (`burst x window x 1000`, see `definePolicy`) would pass
 *   2^53 is bounded to the largest that does not: the rate stays the one asked, only the burst is smaller
 *   (4294967295 a year holds 285,616 at once and refills 136 a second);
 * - zero, which envoyproxy/ratelimit answers OVER_LIMIT for every request, is one request per unit: a quota of 0
 *   is no token bucket.
 *
 * A unit that is no `RateLimitUnit` (`UNKNOWN`, a number outside the enum) has no window to clamp to.
 *
 * @param requestsPerUnit - the override's `requests_per_unit`.
 * @param unit - the override's unit name, as proto-loader decodes it.
 * @param field - the override's place in the request, for messages (`descriptors[2].limit`).
 * @throws RateLimitServiceError `invalid_argument` for an unknown unit or a count that is no uint32.
 */
export function overrideSizes(requestsPerUnit: number, unit: string, field: string): OverrideSizes {
  const window = Object.hasOwn(OVERRIDE_UNITS, unit) ? OVERRIDE_UNITS[unit] : undefined;
  if (window === undefined) {
    throw new RateLimitServiceError(
      'invalid_argument',
      `${field}.unit must be one of ${Object.keys(OVERRIDE_UNITS).join(', ')}, got ${JSON.stringify(unit)}`,
    );
  }
  if (!Number.isInteger(requestsPerUnit) || requestsPerUnit < 0 || requestsPerUnit > MAX_REQUESTS_PER_UNIT) {
    throw new RateLimitServiceError(
      'invalid_argument',
      `${field}.requests_per_unit must be an integer from 0 to ${MAX_REQUESTS_PER_UNIT}, got ${requestsPerUnit}`,
    );
  }
  const quota = Math.max(1, requestsPerUnit);
  // definePolicy's bound: capacity (burst x window x 1000 units) plus one millisecond of refill (quota units).
  const largest = Math.floor((Number.MAX_SAFE_INTEGER - quota) / (window * 1000));
  const burst = Math.min(quota, largest);
  return { quota, window, burst, adjusted: quota !== requestsPerUnit || burst !== quota };
}
