import type { RateLimitStore } from 'sluice';
import type { StoreHealth } from './dashboard-frame.js';

/** Reads a number field of a stats snapshot, or `undefined` when the store does not report it. */
function num(stats: Record<string, unknown>, name: string): number | undefined {
  const v = stats[name];
  return typeof v === 'number' && Number.isFinite(v) ? v : undefined;
}

/**
 * The health of a store as the dashboard shows it, from the store's own `stats()` when it has one (the memory
 * store reports tracked keys, the cap and evictions; the Redis store its state and failure counters).
 *
 * @param store - the gateway's store.
 * @param failureMode - the configured failure mode (`store.failureMode`).
 * @param failoverReported - true when a failover was recorded through the metrics sink and not yet cleared.
 * @returns the health; fields a store does not report are absent.
 */
export function storeHealth(
  store: RateLimitStore,
  failureMode: string,
  failoverReported: boolean,
): StoreHealth {
  const statsOf = (store as { stats?: () => unknown }).stats;
  const raw = typeof statsOf === 'function' ? statsOf.call(store) : undefined;
  const stats = typeof raw === 'object' && raw !== null ? (raw as Record<string, unknown>) : {};
  const redisState = typeof stats.state === 'string' ? stats.state : undefined;
  const base = {
    kind: store.kind,
    failureMode,
    failureModeActive: failoverReported || redisState === 'fallback',
    trackedKeys: num(stats, 'trackedKeys'),
    maxTrackedKeys: num(stats, 'maxTrackedKeys'),
    evictions: num(stats, 'evictions'),
    fullDropped: num(stats, 'fullDropped'),
  };
  if (redisState === undefined) return base;
  return {
    ...base,
    redis: {
      state: redisState,
      errors: num(stats, 'errors') ?? 0,
      timeouts: num(stats, 'timeouts') ?? 0,
      failovers: num(stats, 'failovers') ?? 0,
      recoveries: num(stats, 'recoveries') ?? 0,
      fallbackDecisions: num(stats, 'fallbackDecisions') ?? 0,
      denyCacheSize: num(stats, 'denyCacheSize') ?? 0,
    },
  };
}
