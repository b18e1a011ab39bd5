import type { RateLimitStore } from 'sluice';
import {
  isStoreStatsSource,
  type LimiterMetrics,
  reportStoreEvents,
  type StoreStatsSource,
} from 'sluice/metrics';
import { logStoreTransitions, RedisStore, type StoreLogger } from 'sluice/redis';

/** A metrics sink that can also read a store's counters at scrape time (`PrometheusMetrics`). */
export interface StoreObservingMetrics extends LimiterMetrics {
  observeStore(source: StoreStatsSource): unknown;
}

/** The sinks each store is already observed by, so that a second call changes nothing. */
const observed = new WeakMap<RateLimitStore, WeakSet<StoreObservingMetrics>>();

/**
 * Makes the store's health visible in the gateway's metrics and logs: its counters (tracked keys, evictions) read
 * at every scrape when it reports them; for a Redis store also every failed call (`store_errors_total`), every
 * switch into and out of the failure mode (`store_failure_mode_switches_total`, `store_failure_mode_active`,
 * which reads 0 from the start) and one warn-level line on entering and one on leaving the failure mode.
 *
 * @param metrics - the gateway's sink (its dashboard sinks see the same calls).
 * @param store - the gateway's store.
 * @param logger - the gateway's logger.
 * @returns a function that stops the reporting (call it when the gateway closes). Observing a store again in
 * the same sink changes nothing (no second count, no second log line) and returns a function that does nothing.
 *
 * @example
 * ```ts
 * const stop = observeStore(gateway.metrics, gateway.store, gateway.logger);
 * ```
 */
export function observeStore(
  metrics: StoreObservingMetrics,
  store: RateLimitStore,
  logger: StoreLogger,
): () => void {
  let sinks = observed.get(store);
  if (sinks === undefined) {
    sinks = new WeakSet();
    observed.set(store, sinks);
  }
  if (sinks.has(metrics)) return () => undefined;
  sinks.add(metrics);
  if (isStoreStatsSource(store)) metrics.observeStore(store);
  if (!(store instanceof RedisStore)) return () => undefined;
  const stopMetrics = reportStoreEvents(store, metrics);
  const stopLogs = logStoreTransitions(store, logger);
  return () => {
    stopMetrics();
    stopLogs();
    sinks.delete(metrics);
  };
}
