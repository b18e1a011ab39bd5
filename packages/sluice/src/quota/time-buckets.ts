/**
 * The start, in Unix seconds, of the bucket holding `nowMs`.
 *
 * @param nowMs - wall-clock time in milliseconds.
 * @param bucketSeconds - bucket size in seconds.
 */
export function bucketStart(nowMs: number, bucketSeconds: number): number {
  const s = Math.floor(nowMs / 1000);
  return s - (((s % bucketSeconds) + bucketSeconds) % bucketSeconds);
}

/**
 * The buckets of the rolling window that ends now, oldest first, the current (partial) bucket last. The window
 * covers `windowSeconds / bucketSeconds` buckets, so it reaches back between `windowSeconds - bucketSeconds`
 * and `windowSeconds`: usage leaves the window one whole bucket at a time.
 *
 * @param nowMs - wall-clock time in milliseconds.
 * @param bucketSeconds - bucket size in seconds.
 * @param windowSeconds - window length in seconds, a multiple of `bucketSeconds`.
 */
export function windowBuckets(nowMs: number, bucketSeconds: number, windowSeconds: number): number[] {
  const n = windowSeconds / bucketSeconds;
  const current = bucketStart(nowMs, bucketSeconds);
  const out = new Array<number>(n);
  for (let i = 0; i < n; i++) out[i] = current - (n - 1 - i) * bucketSeconds;
  return out;
}
