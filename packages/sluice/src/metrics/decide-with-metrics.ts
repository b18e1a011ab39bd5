import type { Check, CheckInput, Decision, Limiter, MaybePromise } from '../core/index.js';
import { ErrorCode, SluiceError } from '../core/index.js';
import type { DecisionLabels, LimiterMetrics } from './limiter-metrics.js';

/** Reads a high-resolution time in milliseconds; `performance.now` by default. */
export type Stopwatch = () => number;

const defaultStopwatch: Stopwatch = () => performance.now();

/**
 * Decides through `limiter.decide` and records the decision and its latency in `metrics`. A synchronous store
 * (memory) stays synchronous: no promise is created. When the store throws `ERR_STORE_UNAVAILABLE` (a failure
 * mode that surfaces errors), a store error is recorded and the error is rethrown unchanged.
 *
 * @param limiter - the limiter.
 * @param checks - the request's checks; pass checks from `limiter.resolve` on hot paths.
 * @param cost - tokens to take.
 * @param metrics - where to record.
 * @param labels - tier, rule and store labels from configuration; build the object once per route, not per call.
 * @param stopwatch - the time source for the latency, in milliseconds.
 * @returns the decision.
 * @throws whatever `limiter.decide` throws.
 *
 * @example
 * ```ts
 * const labels = Object.freeze({ tier: 'standard', rule: '/api/*', store: limiter.store.kind });
 * const d = decideWithMetrics(limiter, checks, 1, metrics, labels);
 * ```
 */
export function decideWithMetrics(
  limiter: Limiter,
  checks: readonly (Check | CheckInput)[],
  cost: number,
  metrics: LimiterMetrics,
  labels?: DecisionLabels,
  stopwatch: Stopwatch = defaultStopwatch,
): MaybePromise<Decision> {
  const start = stopwatch();
  let result: MaybePromise<Decision>;
  try {
    result = limiter.decide(checks, cost);
  } catch (error) {
    noteFailure(error, limiter, metrics);
    throw error;
  }
  if (!isPromise(result)) {
    metrics.recordDecision(result, labels, (stopwatch() - start) / 1000);
    return result;
  }
  return result.then(
    (d) => {
      metrics.recordDecision(d, labels, (stopwatch() - start) / 1000);
      return d;
    },
    (error: unknown) => {
      noteFailure(error, limiter, metrics);
      throw error;
    },
  );
}

function noteFailure(error: unknown, limiter: Limiter, metrics: LimiterMetrics): void {
  if (error instanceof SluiceError && error.code === ErrorCode.StoreUnavailable) {
    metrics.recordStoreError(limiter.store.kind);
  }
}

function isPromise<T>(value: MaybePromise<T>): value is Promise<T> {
  return typeof (value as Promise<T>)?.then === 'function';
}
