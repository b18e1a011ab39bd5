import { EventEmitter } from 'node:events';
import {
  type Clock,
  ErrorCode,
  integerOption,
  invalidOption,
  objectOption,
  rejectUnknownKeys,
  SluiceError,
} from '../core/index.js';
import { type LimiterMetrics, noopMetrics } from '../metrics/index.js';
import { MemoryQuotaStore } from './memory-quota-store.js';
import type { QuotaStore } from './quota-store.js';
import {
  QUOTA_TRACKER_OPTIONS,
  type QuotaAlert,
  type QuotaLookup,
  type QuotaTrackerOptions,
  type TenantTotal,
  type TenantUsage,
  thresholdsOption,
} from './quota-tracker-options.js';
import { QuotaWebhook, type QuotaWebhookOptions } from './quota-webhook.js';
import { bucketStart, windowBuckets } from './time-buckets.js';
import { wallClock } from './wall-clock.js';

type Pending = Map<number, Map<string, Map<string, number>>>;

/**
 * Tenant quota tracking: usage per tenant x endpoint category x time bucket over a rolling window, with alerts
 * when a tenant crosses a threshold of its quota.
 *
 * `record` is synchronous and only adds to a map in memory; a timer flushes the counts to the store in one batch
 * (one pipeline for Redis), so tracking adds no round trip to a request. Each flush returns the window totals of
 * the tenants it touched; a tenant whose ratio rises past a threshold raises one alert (an `alert` event, the log
 * hook, the alerts metric and the webhook), claimed in the store so that a fleet alerts once. The threshold
 * re-arms once usage falls `hysteresis` below it.
 *
 * Events: `alert` ({@link QuotaAlert}); `flushError` (a `SluiceError`, after which the counts are kept for the
 * next flush).
 *
 * @example
 * ```ts
 * const quota = new QuotaTracker({ quotas: (t) => tiers[tenantTier(t)].requestsPerHour, thresholds: [0.8, 1] });
 * quota.on('alert', (a) => console.warn(a));
 * quota.record('acme', 'risk-simulation');
 * await quota.usage('acme'); // { total: 1, quota: 10000, ratio: 0.0001, categories: { 'risk-simulation': 1 } }
 * ```
 */
export class QuotaTracker extends EventEmitter {
  /** The store in use. */
  readonly store: QuotaStore;
  readonly windowSeconds: number;
  readonly bucketSeconds: number;
  /** The thresholds, ascending. */
  readonly thresholds: readonly number[];
  /** The webhook, when configured. */
  readonly webhook: QuotaWebhook | undefined;
  readonly #quotas: QuotaLookup | undefined;
  readonly #defaultQuota: number | undefined;
  readonly #hysteresis: number;
  readonly #maxPending: number;
  readonly #clock: Clock;
  readonly #metrics: LimiterMetrics;
  readonly #maxSeries: number;
  readonly #log: ((line: string, alert: QuotaAlert) => void) | undefined;
  readonly #timer: ReturnType<typeof setInterval> | undefined;
  #pending: Pending = new Map();
  #pendingTenants = 0;
  #flushing: Promise<void> | undefined;
  readonly #ratios = new Map<string, number>();
  readonly #levels = new Map<string, number>();
  #lastBucket = Number.NaN;
  #closed = false;
  /** Counts dropped because too many tenants waited for a flush. */
  dropped = 0;

  /** @throws SluiceError `ERR_INVALID_OPTION` for an invalid option, naming it. */
  constructor(options: QuotaTrackerOptions = {}) {
    super();
    const o = objectOption('QuotaTracker options', options);
    rejectUnknownKeys('QuotaTracker options', o, QUOTA_TRACKER_OPTIONS);
    const store = (o.store as QuotaStore | undefined) ?? new MemoryQuotaStore();
    if (typeof store !== 'object' || store === null || typeof store.add !== 'function') {
      throw invalidOption('store', 'a QuotaStore (MemoryQuotaStore or RedisQuotaStore)', store);
    }
    this.store = store;
    this.windowSeconds = integerOption('windowSeconds', o.windowSeconds, 1, 31 * 86_400, 3600);
    this.bucketSeconds = integerOption('bucketSeconds', o.bucketSeconds, 1, this.windowSeconds, 60);
    if (this.windowSeconds % this.bucketSeconds !== 0 || this.windowSeconds / this.bucketSeconds > 1440) {
      throw invalidOption(
        'bucketSeconds',
        `a divisor of windowSeconds (${this.windowSeconds}) giving at most 1440 buckets`,
        this.bucketSeconds,
      );
    }
    if (o.quotas !== undefined && typeof o.quotas !== 'function') {
      const table = objectOption('quotas', o.quotas);
      for (const [tenant, q] of Object.entries(table)) integerOption(`quotas.${tenant}`, q, 1);
    }
    this.#quotas = o.quotas as QuotaLookup | undefined;
    this.#defaultQuota =
      o.defaultQuota === undefined ? undefined : integerOption('defaultQuota', o.defaultQuota, 1);
    this.thresholds = Object.freeze(thresholdsOption(o.thresholds));
    const h = o.hysteresis ?? 0.05;
    if (typeof h !== 'number' || !(h >= 0 && h < 1))
      throw invalidOption('hysteresis', 'a number in [0, 1)', h);
    this.#hysteresis = h;
    const interval = integerOption('flushIntervalMs', o.flushIntervalMs, 0, 2 ** 31 - 1, 1000);
    this.#maxPending = integerOption('maxPendingTenants', o.maxPendingTenants, 1, 10_000_000, 100_000);
    this.#clock = (o.clock as Clock | undefined) ?? wallClock;
    if (typeof this.#clock.now !== 'function') throw invalidOption('clock', 'a Clock', o.clock);
    this.#metrics = (o.metrics as LimiterMetrics | undefined) ?? noopMetrics;
    this.#maxSeries = integerOption('maxTenantSeries', o.maxTenantSeries, 0, 100_000, 100);
    if (o.log !== undefined && typeof o.log !== 'function') throw invalidOption('log', 'a function', o.log);
    this.#log = o.log as ((line: string, alert: QuotaAlert) => void) | undefined;
    if (o.webhook instanceof QuotaWebhook) this.webhook = o.webhook;
    else if (o.webhook !== undefined) {
      this.webhook = new QuotaWebhook({ metrics: this.#metrics, ...(o.webhook as QuotaWebhookOptions) });
    }
    if (interval > 0) {
      this.#timer = setInterval(() => void this.flush().catch(() => undefined), interval);
      // One timer per tracker, never per tenant; it must not keep a process alive.
      (this.#timer as { unref?: () => void }).unref?.();
    }
  }

  /**
   * Counts `cost` units of usage for `tenant` in `category` now. Synchronous and in memory: the next flush writes
   * it. A known tenant and category allocate nothing.
   *
   * @param tenant - the tenant id (from authentication, not from an unverified header).
   * @param category - the endpoint category, from configuration (a closed set).
   * @param cost - units to count, integer >= 1; default 1.
   * @returns false when the count was dropped (too many tenants pending, or the tracker closed).
   * @throws SluiceError `ERR_INVALID_OPTION` for an empty tenant or category or an invalid cost (a caller bug).
   */
  record(tenant: string, category: string, cost = 1): boolean {
    if (typeof tenant !== 'string' || tenant.length === 0)
      throw invalidOption('tenant', 'a non-empty string', tenant);
    if (typeof category !== 'string' || category.length === 0) {
      throw invalidOption('category', 'a non-empty string', category);
    }
    if (!Number.isSafeInteger(cost) || cost < 1) throw invalidOption('cost', 'an integer >= 1', cost);
    if (this.#closed) return false;
    const bucket = bucketStart(this.#clock.now(), this.bucketSeconds);
    let byTenant = this.#pending.get(bucket);
    if (byTenant === undefined) {
      byTenant = new Map();
      this.#pending.set(bucket, byTenant);
    }
    let byCategory = byTenant.get(tenant);
    if (byCategory === undefined) {
      if (this.#pendingTenants >= this.#maxPending) {
        this.dropped += cost;
        return false;
      }
      byCategory = new Map();
      byTenant.set(tenant, byCategory);
      this.#pendingTenants++;
    }
    byCategory.set(category, (byCategory.get(category) ?? 0) + cost);
    return true;
  }

  /** The quota of `tenant` over the window, or undefined when it has none. */
  quotaOf(tenant: string): number | undefined {
    const q = typeof this.#quotas === 'function' ? this.#quotas(tenant) : this.#quotas?.[tenant];
    if (q === undefined) return this.#defaultQuota;
    return Number.isFinite(q) && q > 0 ? q : undefined;
  }

  /**
   * Writes the pending counts to the store in one batch, then checks thresholds for the tenants written (and, when
   * a bucket has rolled over, for tenants whose usage may have left the window). Flushes never overlap: a call
   * during a flush waits for it and then flushes what came in meanwhile.
   *
   * @throws SluiceError `ERR_STORE_UNAVAILABLE` when the store failed; the counts are kept for the next flush.
   */
  async flush(): Promise<void> {
    while (this.#flushing !== undefined) await this.#flushing.catch(() => undefined);
    const run = this.#flushOnce();
    this.#flushing = run;
    try {
      await run;
    } finally {
      this.#flushing = undefined;
    }
  }

  /** A tenant's usage over the window by endpoint category (flushes first). */
  async usage(tenant: string): Promise<TenantUsage> {
    await this.flush();
    const window = this.#window();
    const byCategory = await this.store.usage(tenant, window);
    let total = 0;
    const categories: Record<string, number> = {};
    for (const [c, n] of [...byCategory].sort((a, b) => (a[0] < b[0] ? -1 : 1))) {
      categories[c] = n;
      total += n;
    }
    const quota = this.quotaOf(tenant);
    return {
      tenant,
      total,
      quota,
      ratio: quota === undefined ? undefined : total / quota,
      categories,
      windowSeconds: this.windowSeconds,
      bucketSeconds: this.bucketSeconds,
    };
  }

  /** The `n` tenants with the most usage over the window, most first (flushes first). */
  async topTenants(n = 10): Promise<TenantTotal[]> {
    integerOption('n', n, 1, 10_000);
    await this.flush();
    const rows = await this.store.top(this.#window(), n);
    return rows.map(([tenant, total]) => {
      const quota = this.quotaOf(tenant);
      return { tenant, total, quota, ratio: quota === undefined ? undefined : total / quota };
    });
  }

  /**
   * Flushes, stops the timer and waits for queued webhook deliveries to finish or give up (with the defaults, per
   * delivery at most 7.5 s of backoff plus five attempts of up to 5 s; call `webhook.close()` first to drop them).
   */
  async close(): Promise<void> {
    if (this.#closed) return;
    if (this.#timer !== undefined) clearInterval(this.#timer);
    try {
      await this.flush();
    } finally {
      this.#closed = true;
      await this.webhook?.idle();
    }
  }

  #window(): number[] {
    return windowBuckets(this.#clock.now(), this.bucketSeconds, this.windowSeconds);
  }

  async #flushOnce(): Promise<void> {
    const pending = this.#pending;
    this.#pending = new Map();
    this.#pendingTenants = 0;
    const window = this.#window();
    const touched = new Map<string, number>();
    const buckets = [...pending.keys()].sort((a, b) => a - b);
    for (let i = 0; i < buckets.length; i++) {
      const bucket = buckets[i];
      const counts = pending.get(bucket)!;
      if (bucket < window[0]) continue;
      try {
        const totals = await this.store.add(
          bucket,
          counts,
          window,
          bucket + this.bucketSeconds + this.windowSeconds,
        );
        for (const [t, v] of totals) touched.set(t, v);
      } catch (error) {
        for (let j = i; j < buckets.length; j++) this.#restore(buckets[j], pending.get(buckets[j])!);
        throw this.#failed(error);
      }
    }
    const current = window[window.length - 1];
    if (current !== this.#lastBucket) {
      // Usage leaves the window one bucket at a time: re-read the tenants that are shown (the highest ratios) or
      // hold an alert state, so their gauges fall and their thresholds re-arm without new traffic.
      this.#lastBucket = current;
      const stale = [...this.#topRatios().keys(), ...this.#levels.keys()].filter((t) => !touched.has(t));
      if (stale.length > 0) {
        try {
          for (const [t, v] of await this.store.totals([...new Set(stale)], window)) touched.set(t, v);
        } catch (error) {
          throw this.#failed(error);
        }
      }
    }
    for (const [tenant, total] of touched) await this.#evaluate(tenant, total);
    if (touched.size > 0) this.#metrics.setQuotaUsage(this.#topRatios());
  }

  #restore(bucket: number, counts: Map<string, Map<string, number>>): void {
    for (const [tenant, categories] of counts) {
      for (const [category, n] of categories) {
        // Goes through the same bounds as new counts; a count older than the window is dropped at the next flush.
        let byTenant = this.#pending.get(bucket);
        if (byTenant === undefined) {
          byTenant = new Map();
          this.#pending.set(bucket, byTenant);
        }
        let row = byTenant.get(tenant);
        if (row === undefined) {
          if (this.#pendingTenants >= this.#maxPending) {
            this.dropped += n;
            continue;
          }
          row = new Map();
          byTenant.set(tenant, row);
          this.#pendingTenants++;
        }
        row.set(category, (row.get(category) ?? 0) + n);
      }
    }
  }

  #failed(error: unknown): SluiceError {
    const e =
      error instanceof SluiceError
        ? error
        : new SluiceError(
            ErrorCode.StoreUnavailable,
            `the quota store failed: ${String(error)}`,
            {},
            { cause: error },
          );
    this.#metrics.recordStoreError(`quota-${this.store.kind}`);
    this.emit('flushError', e);
    return e;
  }

  async #evaluate(tenant: string, total: number): Promise<void> {
    const quota = this.quotaOf(tenant);
    if (quota === undefined) return;
    const ratio = total / quota;
    if (ratio > 0) this.#ratios.set(tenant, ratio);
    else this.#ratios.delete(tenant);
    const t = this.thresholds;
    const before = this.#levels.get(tenant) ?? 0;
    let level = 0;
    while (level < t.length && ratio >= t[level]) level++;
    if (level < before) {
      // Re-arm only the thresholds usage has fallen clearly below, so usage hovering at one does not flap.
      let keep = level;
      while (keep < before && ratio >= t[keep] - this.#hysteresis) keep++;
      for (let i = keep; i < before; i++) await this.store.releaseAlert(tenant, t[i]).catch(() => undefined);
      level = keep;
    }
    if (level === 0) this.#levels.delete(tenant);
    else this.#levels.set(tenant, level);
    for (let i = before; i < level; i++) {
      let claimed: boolean;
      try {
        claimed = await this.store.claimAlert(tenant, t[i], this.windowSeconds + this.bucketSeconds);
      } catch (error) {
        throw this.#failed(error);
      }
      if (claimed)
        this.#raise({
          type: 'quota.threshold_crossed',
          tenant,
          threshold: t[i],
          usage: total,
          quota,
          ratio,
          windowSeconds: this.windowSeconds,
          at: new Date(this.#clock.now()).toISOString(),
        });
    }
  }

  #raise(alert: QuotaAlert): void {
    this.#metrics.recordQuotaAlert(alert.threshold);
    if (this.#log !== undefined) {
      const line =
        `quota alert: tenant=${JSON.stringify(alert.tenant)} crossed ${Math.round(alert.threshold * 100)}% ` +
        `of its quota (${alert.usage}/${alert.quota} in ${alert.windowSeconds}s)`;
      try {
        this.#log(line, alert);
      } catch {
        // A failing log hook must not stop the alert's other channels.
      }
    }
    this.webhook?.send(alert.type, alert);
    this.emit('alert', alert);
  }

  #topRatios(): Map<string, number> {
    const entries = [...this.#ratios];
    if (entries.length > this.#maxSeries) {
      entries.sort((a, b) => b[1] - a[1]);
      entries.length = this.#maxSeries;
    }
    return new Map(entries);
  }
}
