import type { FailureMode, LimiterMetrics } from './limiter-metrics.js';

/**
 * A store that announces its failed calls and its switches into and out of its failure mode, such as the Redis
 * store (`error`, `failover` and `recover` events). Described by shape, so this module imports no store.
 */
export interface StoreEventSource {
  /** The store kind, the `store` label. */
  readonly kind: string;
  /** The store's configured failure mode. */
  readonly options: { readonly failureMode: FailureMode };
  on(event: 'failover' | 'recover' | 'error', listener: () => void): unknown;
  off(event: 'failover' | 'recover' | 'error', listener: () => void): unknown;
  /** The store's state now, when it tells (`fallback` while its failure mode decides). */
  stats?(): { readonly state?: string };
}

/**
 * Records what a store reports as it happens: each failed call as a store error (`recordStoreError`), each switch
 * into or out of its failure mode (`recordFailover`). The failure mode gauge is set at once to the store's
 * current state, so a dashboard or an alert reads 0 rather than nothing before the first outage.
 *
 * @param store - a store with `error`, `failover` and `recover` events, for example a `RedisStore`.
 * @param metrics - the sink.
 * @returns a function that stops the reporting.
 *
 * @example
 * ```ts
 * const stop = reportStoreEvents(redisStore, metrics);
 * // <prefix>_store_failure_mode_active{store="redis",mode="local"} 0, then 1 during an outage
 * // <prefix>_store_errors_total{store="redis"}, <prefix>_store_failure_mode_switches_total{store="redis",mode="local"}
 * ```
 */
export function reportStoreEvents(store: StoreEventSource, metrics: LimiterMetrics): () => void {
  const mode = store.options.failureMode;
  const onError = () => metrics.recordStoreError(store.kind);
  const onFailover = () => metrics.recordFailover(store.kind, mode, true);
  const onRecover = () => metrics.recordFailover(store.kind, mode, false);
  metrics.recordFailover(store.kind, mode, store.stats?.().state === 'fallback');
  store.on('error', onError);
  store.on('failover', onFailover);
  store.on('recover', onRecover);
  return () => {
    store.off('error', onError);
    store.off('failover', onFailover);
    store.off('recover', onRecover);
  };
}
