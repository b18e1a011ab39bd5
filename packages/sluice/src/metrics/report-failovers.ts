import type { FailureMode, LimiterMetrics } from './limiter-metrics.js';

/**
 * A store that announces when it switches to its failure mode and back, such as the Redis store (`failover` and
 * `recover` events). Described by shape, so this module imports no store.
 */
export interface FailoverSource {
  /** The store kind, the `store` label. */
  readonly kind: string;
  /** The store's configured failure mode. */
  readonly options: { readonly failureMode: FailureMode };
  on(event: 'failover' | 'recover', listener: () => void): unknown;
  off(event: 'failover' | 'recover', listener: () => void): unknown;
}

/**
 * Records a store's switches into and out of its failure mode in `metrics` (`recordFailover`), as they happen.
 *
 * @param store - a store with `failover` and `recover` events, for example a `RedisStore`.
 * @param metrics - the sink.
 * @returns a function that stops the reporting.
 *
 * @example
 * ```ts
 * const stop = reportFailovers(redisStore, metrics); // <prefix>_store_failure_mode_active{store="redis",mode="local"}
 * ```
 */
export function reportFailovers(store: FailoverSource, metrics: LimiterMetrics): () => void {
  const onFailover = () => metrics.recordFailover(store.kind, store.options.failureMode, true);
  const onRecover = () => metrics.recordFailover(store.kind, store.options.failureMode, false);
  store.on('failover', onFailover);
  store.on('recover', onRecover);
  return () => {
    store.off('failover', onFailover);
    store.off('recover', onRecover);
  };
}
