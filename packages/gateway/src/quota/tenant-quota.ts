import type { Cluster, Redis } from 'ioredis';
import type { Clock } from 'sluice';
import type { LimiterMetrics } from 'sluice/metrics';
import { type QuotaRedisClient, type QuotaStore, QuotaTracker, RedisQuotaStore } from 'sluice/quota';
import type { GatewayConfig } from '../config/gateway-config.js';
import type { Logger } from '../log/create-logger.js';

/** Tenants whose last tier is remembered at most; the oldest is forgotten first. */
const MAX_REMEMBERED_TIERS = 100_000;

/** Options of {@link TenantQuota.open}. */
export interface TenantQuotaOptions {
  /** The configuration at start; its `quota` section must be set. */
  readonly config: GatewayConfig;
  /** The configuration in effect, read when a quota is looked up, so a reload of `quota.limits` applies at once. */
  readonly current: () => GatewayConfig;
  /** The store's Redis client, reused for `storage: redis`. */
  readonly redis: Redis | Cluster | undefined;
  /**
   * Where usage is kept when it is not in Redis; default a memory store of this tracker's own. The threads of
   * `sluice serve --threads` pass the main thread's store here.
   */
  readonly memoryStore?: QuotaStore;
  /** Where usage ratios, alerts and quota store errors are recorded. */
  readonly metrics: LimiterMetrics;
  readonly logger: Logger;
  /** Wall-clock time of the time buckets. */
  readonly clock: Clock;
}

/**
 * The gateway's tenant quota tracking: a `QuotaTracker` (sluice/quota) built from the `quota:` section, over
 * memory or the store's Redis connection, whose tenant quotas are `quota.limits` or, by default, the hourly limit
 * of the tier the tenant last came with, scaled to the window. Recording is synchronous and in memory; the tracker
 * flushes in batches, so a request never waits for the quota store.
 *
 * @example
 * ```ts
 * const quota = TenantQuota.open({ config, current: () => gateway.config, redis, metrics, logger, clock });
 * quota?.record('acme', 'standard', 'risk-simulation', 1);
 * ```
 */
export class TenantQuota {
  /** The tracker: `usage(tenant)`, `topTenants(n)`, `alert` events. */
  readonly tracker: QuotaTracker;
  readonly #current: () => GatewayConfig;
  readonly #tiers = new Map<string, string>();

  private constructor(tracker: QuotaTracker, current: () => GatewayConfig) {
    this.tracker = tracker;
    this.#current = current;
  }

  /**
   * Builds the tracking of a configuration, or `undefined` when it has no `quota:` section.
   *
   * @throws SluiceError `ERR_INVALID_OPTION` when the section's values are refused by the tracker (the schema and
   * the resolver check them first).
   */
  static open(options: TenantQuotaOptions): TenantQuota | undefined {
    const q = options.config.quota;
    if (q === undefined) return undefined;
    const { logger } = options;
    let self: TenantQuota | undefined;
    const store =
      q.storage === 'redis' && options.redis !== undefined
        ? new RedisQuotaStore({
            client: options.redis as unknown as QuotaRedisClient,
            keyPrefix: q.keyPrefix,
          })
        : options.memoryStore;
    const tracker = new QuotaTracker({
      ...(store === undefined ? {} : { store }),
      windowSeconds: q.windowSeconds,
      bucketSeconds: q.bucketSeconds,
      flushIntervalMs: q.flushIntervalMs,
      thresholds: q.thresholds,
      quotas: (tenant) => self?.quotaOf(tenant),
      clock: options.clock,
      metrics: options.metrics,
      log: (line, alert) => logger.warn({ alert }, line),
      ...(q.webhook === undefined
        ? {}
        : {
            webhook: {
              url: q.webhook.url,
              secret: q.webhook.secret,
              headerPrefix: q.webhook.headerPrefix,
              metrics: options.metrics,
              onError: (e) => logger.error({ err: e }, 'quota webhook delivery failed'),
            },
          }),
    });
    tracker.on('flushError', (e: Error) =>
      logger.error({ err: e }, 'quota flush failed; counts kept for the next flush'),
    );
    self = new TenantQuota(tracker, options.current);
    return self;
  }

  /**
   * Counts an admitted request of a tenant. Synchronous and in memory.
   *
   * @param tenant - the verified tenant id.
   * @param tier - the tier the request was decided under, remembered for the tenant's default quota.
   * @param category - the endpoint category.
   * @param cost - units, an integer >= 1.
   */
  record(tenant: string, tier: string, category: string, cost: number): void {
    if (this.#tiers.get(tenant) !== tier) {
      this.#tiers.delete(tenant);
      if (this.#tiers.size >= MAX_REMEMBERED_TIERS) {
        const oldest = this.#tiers.keys().next().value;
        if (oldest !== undefined) this.#tiers.delete(oldest);
      }
      this.#tiers.set(tenant, tier);
    }
    this.tracker.record(tenant, category, cost);
  }

  /**
   * A tenant's quota over the window: its `quota.limits.tenants` entry, else `quota.limits.default`, else its
   * tier's `requestsPerHour` scaled to the window (at least 1); `undefined` when none applies.
   */
  quotaOf(tenant: string): number | undefined {
    const c = this.#current();
    const q = c.quota;
    if (q === undefined) return undefined;
    const named = Object.hasOwn(q.tenantLimits, tenant) ? q.tenantLimits[tenant] : undefined;
    if (named !== undefined) return named;
    if (q.defaultLimit !== undefined) return q.defaultLimit;
    const tier = this.#tiers.get(tenant);
    const perHour = tier === undefined ? undefined : c.tiers[tier]?.perHour;
    if (perHour === undefined) return undefined;
    return Math.max(1, Math.floor((perHour * q.windowSeconds) / 3600));
  }

  /** Flushes the pending counts and stops the tracker, waiting for queued webhook deliveries at most `ms`. */
  async close(ms: number): Promise<void> {
    let timer: ReturnType<typeof setTimeout> | undefined;
    const done = this.tracker.close().catch(() => undefined);
    await Promise.race([
      done,
      new Promise<void>((r) => {
        timer = setTimeout(r, ms);
        timer.unref();
      }),
    ]);
    clearTimeout(timer);
    await this.tracker.webhook?.close();
  }
}
