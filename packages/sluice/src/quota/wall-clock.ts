import { type Clock, monotonicClock } from '../core/index.js';

/**
 * Wall-clock time (`Date.now()`) with the monotonic clock's waits. Quota buckets need wall time, unlike token
 * buckets: every process of a fleet must cut time into the same buckets, and a bucket key names its start in
 * Unix seconds. A wall-clock jump moves usage into another bucket, which only shifts the rolling window a little.
 */
export const wallClock: Clock = Object.freeze({
  now: () => Date.now(),
  sleep: (ms: number, signal?: AbortSignal) => monotonicClock.sleep(ms, signal),
});
