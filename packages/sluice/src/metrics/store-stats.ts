import type { StoreStatsSource } from './limiter-metrics.js';

/**
 * The typed capability behind `observeStore`: true when a store reports its counters through `stats()` as
 * whole numbers (`trackedKeys`, `evictions`), as `MemoryStore` and `RedisStore` do. A store without it is not
 * observed, rather than observed as `NaN`.
 *
 * @param store - any store.
 *
 * @example
 * ```ts
 * if (isStoreStatsSource(store)) metrics.observeStore(store);
 * ```
 */
export function isStoreStatsSource(store: unknown): store is StoreStatsSource {
  if (typeof store !== 'object' || store === null) return false;
  const s = store as { kind?: unknown; stats?: unknown };
  if (typeof s.kind !== 'string' || typeof s.stats !== 'function') return false;
  let snapshot: unknown;
  try {
    snapshot = (s.stats as () => unknown).call(store);
  } catch {
    return false;
  }
  if (typeof snapshot !== 'object' || snapshot === null) return false;
  const { trackedKeys, evictions } = snapshot as { trackedKeys?: unknown; evictions?: unknown };
  return isCount(trackedKeys) && isCount(evictions);
}

function isCount(v: unknown): boolean {
  return typeof v === 'number' && Number.isInteger(v) && v >= 0;
}
