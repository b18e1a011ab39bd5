/**
 * Full-jitter exponential backoff: a uniform delay in `[0, min(cap, initial * multiplier^attempt))`.
 *
 * Full jitter spreads the retries of many clients refused at the same moment across the whole interval, so they
 * do not return together and get refused together again (the "thundering herd" that plain exponential backoff
 * keeps in step).
 *
 * @param attempt - 0 for the first retry.
 * @param initialSeconds - the ceiling of the first retry.
 * @param multiplier - growth of the ceiling per retry.
 * @param maxSeconds - the largest ceiling.
 * @param random - uniform in [0, 1).
 * @returns whole milliseconds to wait.
 *
 * @example
 * ```ts
 * fullJitterDelayMs(2, 1, 2, 60, () => 0.5); // 2000: half of min(60, 1 * 2^2) seconds
 * ```
 */
export function fullJitterDelayMs(
  attempt: number,
  initialSeconds: number,
  multiplier: number,
  maxSeconds: number,
  random: () => number,
): number {
  const ceilingSeconds = Math.min(maxSeconds, initialSeconds * multiplier ** attempt);
  // A broken random source must not produce a negative or unbounded wait.
  const r = Math.min(Math.max(random(), 0), 1);
  return Math.floor(r * ceilingSeconds * 1000);
}
