/**
 * A source of time in milliseconds. Buckets only ever compare two readings of one clock, so the clock must be
 * monotonic: a wall-clock jump (NTP, a manual change) must not refill or drain a bucket.
 */
export interface Clock {
  /** Milliseconds from an arbitrary origin; never decreases (a decrease is clamped by the stores anyway). */
  now(): number;
  /**
   * Resolves after `ms` milliseconds of this clock, or rejects with the signal's reason when it aborts. A fake
   * clock resolves it when advanced, so waits are testable without real sleeping.
   */
  sleep(ms: number, signal?: AbortSignal): Promise<void>;
}

// Read once: Node.js defines the global `performance` as an accessor, and going through it costs a getter call
// on every reading, about a tenth of a whole memory-store decision.
const perf: Performance = globalThis.performance;

/**
 * The default clock: `performance.now()`, monotonic in Node.js and browsers, with real timers for waits. Only
 * globals are used, so the core stays free of Node imports.
 */
export const monotonicClock: Clock = Object.freeze({
  now: () => perf.now(),
  sleep(ms: number, signal?: AbortSignal): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      if (signal?.aborted) {
        reject(signal.reason);
        return;
      }
      const onAbort = () => {
        clearTimeout(timer);
        reject((signal as AbortSignal).reason);
      };
      const timer = setTimeout(() => {
        signal?.removeEventListener('abort', onAbort);
        resolve();
      }, ms);
      signal?.addEventListener('abort', onAbort, { once: true });
    });
  },
});
