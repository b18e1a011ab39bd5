import { integerOption, objectOption, rejectUnknownKeys } from '../core/index.js';
import type { BucketCounts, QuotaStore } from './quota-store.js';

/** Options of {@link MemoryQuotaStore}. */
export interface MemoryQuotaStoreOptions {
  /** The most tenants held per bucket; counts for further tenants are dropped and counted. Default 100,000. */
  readonly maxTenantsPerBucket?: number;
}

interface Bucket {
  readonly byTenant: Map<string, Map<string, number>>;
  readonly totals: Map<string, number>;
}

/**
 * Quota usage in process memory: for one process, or for tests. Buckets older than the window are dropped on
 * the next write, and each bucket holds at most `maxTenantsPerBucket` tenants, so memory stays bounded.
 *
 * @example
 * ```ts
 * const tracker = new QuotaTracker({ store: new MemoryQuotaStore(), quotas: { acme: 10_000 } });
 * ```
 */
export class MemoryQuotaStore implements QuotaStore {
  readonly kind = 'memory';
  readonly #buckets = new Map<number, Bucket>();
  readonly #claims = new Set<string>();
  readonly #maxTenants: number;
  /** Counts dropped because a bucket was full of tenants. */
  dropped = 0;

  /** @throws SluiceError `ERR_INVALID_OPTION` for an invalid option. */
  constructor(options: MemoryQuotaStoreOptions = {}) {
    const o = objectOption('MemoryQuotaStore options', options);
    rejectUnknownKeys('MemoryQuotaStore options', o, ['maxTenantsPerBucket']);
    this.#maxTenants = integerOption('maxTenantsPerBucket', o.maxTenantsPerBucket, 1, 2 ** 30, 100_000);
  }

  async add(bucket: number, counts: BucketCounts, window: readonly number[]): Promise<Map<string, number>> {
    for (const b of this.#buckets.keys()) if (b < window[0]) this.#buckets.delete(b);
    let target = this.#buckets.get(bucket);
    if (target === undefined && bucket >= window[0]) {
      target = { byTenant: new Map(), totals: new Map() };
      this.#buckets.set(bucket, target);
    }
    if (target !== undefined) {
      for (const [tenant, categories] of counts) {
        let row = target.byTenant.get(tenant);
        if (row === undefined) {
          if (target.byTenant.size >= this.#maxTenants) {
            for (const n of categories.values()) this.dropped += n;
            continue;
          }
          row = new Map();
          target.byTenant.set(tenant, row);
        }
        let sum = 0;
        for (const [category, n] of categories) {
          row.set(category, (row.get(category) ?? 0) + n);
          sum += n;
        }
        target.totals.set(tenant, (target.totals.get(tenant) ?? 0) + sum);
      }
    }
    return this.totals([...counts.keys()], window);
  }

  async totals(tenants: readonly string[], window: readonly number[]): Promise<Map<string, number>> {
    const out = new Map<string, number>();
    for (const t of tenants) {
      let sum = 0;
      for (const b of window) sum += this.#buckets.get(b)?.totals.get(t) ?? 0;
      out.set(t, sum);
    }
    return out;
  }

  async usage(tenant: string, window: readonly number[]): Promise<Map<string, number>> {
    const out = new Map<string, number>();
    for (const b of window) {
      const row = this.#buckets.get(b)?.byTenant.get(tenant);
      if (row === undefined) continue;
      for (const [category, n] of row) out.set(category, (out.get(category) ?? 0) + n);
    }
    return out;
  }

  async top(window: readonly number[], n: number): Promise<[string, number][]> {
    const sums = new Map<string, number>();
    for (const b of window) {
      const bucket = this.#buckets.get(b);
      if (bucket === undefined) continue;
      for (const [t, v] of bucket.totals) sums.set(t, (sums.get(t) ?? 0) + v);
    }
    return [...sums].sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1)).slice(0, n);
  }

  /** One process holds every claim, so a claim lasts until released; `ttlSeconds` only matters for a fleet. */
  async claimAlert(tenant: string, threshold: number, _ttlSeconds: number): Promise<boolean> {
    const key = `${tenant}\u0000${threshold}`;
    if (this.#claims.has(key)) return false;
    this.#claims.add(key);
    return true;
  }

  async releaseAlert(tenant: string, threshold: number): Promise<void> {
    this.#claims.delete(`${tenant}\u0000${threshold}`);
  }

  async close(): Promise<void> {
    this.#buckets.clear();
    this.#claims.clear();
  }
}
