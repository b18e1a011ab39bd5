import { EventEmitter } from 'node:events';
import { resolve } from 'node:path';
import type { RateLimitStore } from 'sluice';
import type { PrometheusMetrics } from 'sluice/prometheus';
import { wallClock } from 'sluice/quota';
import { RedisStore } from 'sluice/redis';
import { EXEMPT_REASONS } from '../admission/admit-request.js';
import { OverrideControl } from '../admission/override-control.js';
import type { Penalties } from '../admission/penalties.js';
import { Runtime } from '../admission/runtime.js';
import { configWarnings } from '../config/config-warnings.js';
import type { GatewayConfig } from '../config/gateway-config.js';
import { loadedSource } from '../config/loaded-source.js';
import type { LimitedKeysView, RateWindow, ThreadPeers } from '../dashboard/index.js';
import type { LimitedKeyFacts } from '../dashboard/limited-key-facts.js';
import { createLogger, type Logger } from '../log/create-logger.js';
import { logConfigWarnings } from '../log/log-config-warnings.js';
import { SettleReport } from '../metrics/settle-report.js';
import { TappedMetrics } from '../metrics/tapped-metrics.js';
import { UpstreamProxy } from '../proxy/upstream-proxy.js';
import { TenantQuota } from '../quota/tenant-quota.js';
import type { BucketView } from '../server/admin-server.js';
import { ConnectionCounts } from '../server/connection-counts.js';
import { type OverrideCheck, overrideChecks } from '../server/override-checks.js';
import { ProxyServer } from '../server/proxy-server.js';
import { createStore, type OpenedStore } from '../store/create-store.js';
import { observeStore } from '../store/observe-store.js';
import { capacityMetrics } from './capacity-metrics.js';
import { type ConnectionLimits, connectionLimits } from './connection-limits.js';
import { type DashboardData, dashboardData, threadFeed } from './dashboard-data.js';
import type { GatewayOptions } from './gateway-options.js';
import { bucketsOf } from './key-buckets.js';
import { listenAs } from './listen-error.js';
import { penaltyBlocks } from './penalty-blocks.js';
import { ReloadController, type ReloadResult } from './reload-controller.js';
import { SideListeners } from './side-listeners.js';

export type { GatewayOptions } from './gateway-options.js';
/** A key's bucket as the admin API and {@link Gateway.inspect} show it. */
export type { BucketView, ReloadResult };

/** How long start waits for the store's first connection before listening anyway. */
const STORE_READY_MS = 5000;
/** Milliseconds between two dashboard feeds of a thread to the first thread. */
const FEED_MS = 500;

/**
 * The sluice gateway: a rate-limiting reverse proxy. Each request is checked against its exemptions, its
 * identity (JWT, API key or trusted identity headers, failed credentials counting against the client IP's
 * public-auth bucket) and its policies (the tier's minute and hour buckets plus every matching endpoint rule,
 * all or nothing), then proxied to the upstream with undici, bodies streamed both ways. It owns every listener
 * its configuration asks for: the proxy, and the admin API with the dashboard (`admin:`), the HTTP decision API
 * (`decision:`) and the Envoy rate limit service (`envoy:`), which decide with the same store and policies.
 *
 * Events: `reload` ({@link ReloadResult}) after each reload attempt, `closed` after shutdown.
 *
 * @example
 * ```ts
 * const gateway = await Gateway.start({ config: loadConfigOrThrow('rate-limits.yaml') });
 * console.log(gateway.url, gateway.decisionUrl, gateway.envoyAddress);
 * process.on('SIGTERM', () => gateway.close());
 * ```
 */
export class Gateway extends EventEmitter {
  /** The base URL clients use, for example `http://127.0.0.1:8080`. */
  url = '';
  /** The Prometheus sink every decision is recorded in (it also feeds the dashboard's sinks below). */
  readonly metrics: PrometheusMetrics;
  /**
   * The Prometheus text `/metrics` serves: this gateway's registry or, as one thread of `sluice serve --threads`,
   * every thread's series aggregated (counters and histograms summed).
   */
  readonly scrape: () => Promise<string>;
  /** Per-second counts of the last minutes of decisions, for the dashboard. */
  readonly rates: RateWindow;
  /**
   * The keys denied most often, as keyed hashes, for the dashboard and the admin API; as the first thread of
   * `sluice serve --threads`, over every thread.
   */
  readonly topLimitedKeys: LimitedKeysView;
  /** The first thread of several: the other threads' dashboard data, merged into this one's. */
  readonly peers: ThreadPeers | undefined;
  /**
   * Tenant quota tracking (the `quota:` section): usage by tenant, endpoint category and time bucket, alerts at
   * thresholds; `undefined` when not configured.
   */
  readonly quota: TenantQuota | undefined;
  readonly logger: Logger;
  readonly store: RateLimitStore;
  /** Run-time overrides and blocks: validated, stored beside the buckets, audited. */
  readonly overrides: OverrideControl;
  /** What each limited key is, for the dashboard's top list (this thread's denials). */
  readonly limitedKeyFacts: LimitedKeyFacts;
  /** Automatic blocks of keys limited again and again (`penalty:`); idle without the section. */
  readonly penalties: Penalties;
  readonly #opened: OpenedStore;
  readonly #reloads: ReloadController;
  readonly #proxy: ProxyServer;
  readonly #limits: ConnectionLimits;
  readonly #side: SideListeners;
  readonly #unobserveStore: () => void;
  /** The dashboard data, whose parts the fields above show. */
  readonly #dashboard: DashboardData;
  /** Asks the other threads of `sluice serve --threads` to forget a key (undefined without threads). */
  readonly #forgetOnPeers: ((key: string) => Promise<void>) | undefined;
  #feedTimer: ReturnType<typeof setInterval> | undefined;
  #closing: Promise<void> | undefined;
  /** The wall clock override rules end by. */
  readonly #now: () => number;
  /** A thread of `sluice serve --threads` starts out not ready: the main thread says when every thread listens. */
  #everyThreadListens: boolean;

  private constructor(options: GatewayOptions) {
    super();
    const config = options.config;
    const now = options.now ?? Date.now;
    this.#now = now;
    this.logger = options.logger ?? createLogger(config.logging.level);
    this.#everyThreadListens = options.thread === undefined;
    this.#opened = options.thread?.store ?? createStore(config, options.clock, options.thread?.threads, now);
    this.store = this.#opened.store;
    this.#reloads = new ReloadController({
      // Reloaded runtimes keep these events: the wall clock of reset times, and a log line per store failure.
      runtime: new Runtime(config, this.store, undefined, {
        now,
        ...(options.clock === undefined ? {} : { clock: options.clock }),
        // The metrics are built below; queues report to them once requests flow.
        queueMetrics: {
          setQueueLength: (policy, length) => this.metrics.setQueueLength(policy, length),
          recordQueueWait: (policy, seconds, result) => this.metrics.recordQueueWait(policy, seconds, result),
        },
        settleMetrics: new SettleReport(() => this.metrics.registry, config.metrics.prefix, this.logger, now),
        onStoreError: (e) => this.logger.error({ err: e }, 'rate-limit store failed'),
        overrides: this.#opened.overrideStore,
        upstreamPool: (o) => new UpstreamProxy(o),
        overloadCount: options.thread?.overloadCount,
      }),
      store: this.store,
      logger: this.logger,
      file: options.configFile,
      overrides: options.overrides,
      env: options.env,
      onReload: (result) => this.emit('reload', result),
    });
    this.overrides = new OverrideControl(
      this.#opened.overrideStore,
      () => this.#reloads.runtime,
      this.logger,
      now,
    );
    const thread = options.thread;
    this.#forgetOnPeers = thread?.forgetOnPeers;
    const dashboard = dashboardData(thread, options.clock, config.keys.prefix, now);
    this.#dashboard = dashboard;
    this.rates = dashboard.rates;
    this.peers = dashboard.peers;
    this.topLimitedKeys = dashboard.topLimitedKeys;
    this.limitedKeyFacts = dashboard.limitedKeyFacts;
    this.metrics = new TappedMetrics([this.rates, dashboard.limitedKeys, this.limitedKeyFacts], {
      prefix: config.metrics.prefix,
      exemptReasons: [...EXEMPT_REASONS],
    });
    this.penalties = penaltyBlocks(
      this.overrides,
      () => this.#reloads.runtime.config.penalty,
      now,
      this.logger,
      {
        registry: this.metrics.registry,
        prefix: config.metrics.prefix,
      },
    );
    this.scrape = options.thread?.scrape ?? (() => this.metrics.registry.metrics());
    this.#unobserveStore = observeStore(this.metrics, this.store, this.logger);
    this.quota = TenantQuota.open({
      config,
      current: () => this.#reloads.runtime.config,
      redis: this.#opened.redis,
      ...(thread?.quotaStore === undefined ? {} : { memoryStore: thread.quotaStore }),
      metrics: this.metrics,
      logger: this.logger,
      // Quota buckets are wall-clock time, shared by a fleet through Redis.
      clock: { now: () => now(), sleep: (ms, signal) => wallClock.sleep(ms, signal) },
    });
    capacityMetrics(() => this.#reloads.runtime, this.metrics.registry, config.metrics.prefix);
    this.#limits = connectionLimits({
      runtime: () => this.#reloads.runtime,
      logger: this.logger,
      metrics: { registry: this.metrics.registry, prefix: config.metrics.prefix },
      ...(thread?.connections === undefined ? {} : { counts: ConnectionCounts.on(thread.connections) }),
      file: this.#reloads.file,
    });
    this.#proxy = new ProxyServer(this, config.server, now, { gate: this.#limits.gate });
    this.#side = new SideListeners(this, config, now);
  }

  /**
   * Starts the gateway: opens the store, listens on `server.host:server.port` and on every other listener the
   * configuration has (admin, decision API, Envoy service), and watches the configuration file when asked. A
   * configuration from the loader (`loadConfigFile`, `loadConfigOrThrow`) carries its text: a file saved since it
   * was read differs from it once the watch is attached, and is reloaded.
   *
   * @throws SluiceError `ERR_INVALID_CONFIG` when a JWKS or API key file is unusable; listen errors as Node and
   * gRPC report them (for example `EADDRINUSE`, with its `code`), their message led by the option of the port
   * (`server.port (the proxy listener): listen EADDRINUSE: ...`), after whatever started is closed.
   */
  static async start(options: GatewayOptions): Promise<Gateway> {
    const g = new Gateway(options);
    const c = options.config;
    try {
      // Listening before the store answers would leave the first requests to the failure mode.
      if (!(await g.#opened.ready(STORE_READY_MS)))
        g.logger.warn(
          { failureMode: c.store.failureMode, overridesKnown: g.overrides.loaded },
          'the store is not connected yet; listening anyway (the failure mode decides, blocks in the store apply once read)',
        );
      g.url = await listenAs('server.port', 'the proxy listener', () =>
        g.#proxy.listen(c.server.host, c.server.port, options.thread !== undefined),
      );
      if (options.thread?.sideListeners ?? true) await g.#side.start(c);
    } catch (e) {
      await g.close();
      throw e;
    }
    // The text the configuration came from: a save made since the file was read (while the store connected and
    // the listeners started) shows as a different text once the watch is attached, and is reloaded.
    const file = g.#reloads.file;
    if (file !== undefined && (options.watch ?? c.reload.watch))
      g.#reloads.watch(resolve(file) === c.file ? loadedSource(c) : undefined);
    const publish = options.thread?.publish;
    if (publish !== undefined) {
      g.#feedTimer = setInterval(
        () => publish(threadFeed(g.#dashboard, g.#proxy.inflight, g.#reloads.runtime)),
        FEED_MS,
      );
      g.#feedTimer.unref();
    }
    g.logger.info(
      {
        url: g.url,
        admin: g.adminUrl,
        decision: g.decisionUrl,
        envoy: g.envoyAddress,
        upstream: c.upstream.url,
        store: g.store.kind,
        // The cap in force, derived from the open file limit when the file does not set it.
        maxConnections: g.maxConnections,
      },
      'sluice gateway listening',
    );
    logConfigWarnings(g.logger, configWarnings(c), g.#reloads.file);
    return g;
  }

  /** The admin listener's base URL, or `undefined` when no `admin:` section is configured. */
  get adminUrl(): string | undefined {
    return this.#side.adminUrl;
  }

  /**
   * The decision API's base URL (its endpoint is `decision.path` below it, `/decide` by default), or `undefined`
   * when no `decision:` section is configured.
   */
  get decisionUrl(): string | undefined {
    return this.#side.decisionUrl;
  }

  /** `host:port` of the Envoy rate limit service, or `undefined` when no `envoy:` section is configured. */
  get envoyAddress(): string | undefined {
    return this.#side.envoyAddress;
  }

  /**
   * The cap on the proxy listener's connections in force: `server.maxConnections`, or the default derived at start
   * from the open file limit when the file does not set it (`0`: no cap). `GET /config` of the admin API shows it.
   */
  get maxConnections(): number {
    return this.#limits.maxConnections();
  }

  /** The configuration in effect. */
  get config(): GatewayConfig {
    return this.#reloads.runtime.config;
  }

  /**
   * The compiled configuration in effect (policies, identity, exemptions); replaced as a whole on reload. The
   * decision API and the Envoy service read it per request, so they decide exactly as the proxy does.
   */
  get runtime(): Runtime {
    return this.#reloads.runtime;
  }

  /** True while a thread of the same `sluice serve --threads` process does not listen yet (`/ready` says 503). */
  get starting(): boolean {
    return !this.#everyThreadListens;
  }

  /**
   * As one thread of `sluice serve --threads`: every thread of the process listens now, so `/ready` may answer
   * 200. The main thread calls it (through the thread's message port) once the last thread listens.
   */
  everyThreadListens(): void {
    this.#everyThreadListens = true;
  }

  /** Requests being served now (by every thread, as the first thread of several). */
  get inflight(): number {
    return this.#proxy.inflight + (this.peers?.inflight ?? 0);
  }

  /**
   * Reads the configuration file again. A valid file replaces the configuration; policies whose limits did not
   * change keep their buckets. An invalid file changes nothing and every violation is logged.
   *
   * @param source - the file's text, read once by the main thread of `sluice serve --threads` for every thread;
   * absent, the file is read here.
   */
  async reload(source?: string): Promise<ReloadResult> {
    return this.#reloads.reload(source);
  }

  /**
   * The buckets of a key under every policy, without taking anything.
   *
   * @param key - an identity key such as `ip:203.0.113.9` or `acme:ci-bot` (without the key prefix).
   */
  inspect(key: string): Promise<BucketView[]> {
    return bucketsOf(this.#reloads.runtime.plan, key, this.#overrideChecks(key));
  }

  /** The buckets of a key under the `limit` overrides in force for it, which requests count in instead. */
  #overrideChecks(key: string): OverrideCheck[] {
    const rt = this.#reloads.runtime;
    const prefix = rt.config.keys.prefix;
    const rules = this.#opened.overrideStore.snapshot().rules;
    if (rules.length === 0) return [];
    return overrideChecks(rt.plan.limiter.policies, rules, key, prefix + key, this.#now());
  }

  /**
   * Forgets every bucket of a key, so it starts full under each policy. As the first thread of
   * `sluice serve --threads`, resolves only once every other thread has dropped what it held of the key in
   * memory too (see {@link Gateway.forgetKey}).
   *
   * @throws SluiceError `ERR_STORE_UNAVAILABLE` when Redis does not answer; Error naming a thread that did not
   * confirm in time.
   */
  async resetKey(key: string): Promise<void> {
    const plan = this.#reloads.runtime.plan;
    // Redis first, then the other threads: a denial another thread remembers from before the reset is dropped,
    // and one it is still waiting for is not remembered (the deny cache's epoch, D-R08). When Redis does not
    // answer, the other threads' local failure mode buckets are reset all the same, as this thread's are.
    try {
      await plan.limiter.store.reset([...plan.allChecks(key), ...this.#overrideChecks(key)]);
    } finally {
      await this.#forgetOnPeers?.(key);
    }
    this.logger.info({ key }, 'key reset');
  }

  /**
   * Drops what this gateway holds of a key's buckets in process memory, without touching the store's shared
   * state: a Redis store's deny cache entries and local failure mode buckets. Another thread of the process
   * calls it through the main thread after resetting the key in Redis.
   */
  forgetKey(key: string): void {
    if (!(this.store instanceof RedisStore)) return;
    this.store.forget([...this.#reloads.runtime.plan.allChecks(key), ...this.#overrideChecks(key)]);
  }

  /**
   * Stops the gateway: reports not ready, lets requests in flight finish (up to `server.shutdownTimeout`; the
   * proxy listener answers the probes meanwhile, and nothing else on new connections), then closes every listener
   * and connection, the upstream pool and the store.
   */
  close(): Promise<void> {
    this.#closing ??= this.#shutdown();
    return this.#closing;
  }

  async #shutdown(): Promise<void> {
    if (this.#feedTimer !== undefined) clearInterval(this.#feedTimer);
    this.#reloads.close();
    await Promise.all([this.#proxy.close(), this.#side.close()]);
    const rt = this.#reloads.runtime;
    await rt.proxy?.destroy();
    // The last counts go to the quota store before its connection closes; queued alert webhooks get a moment.
    await this.quota?.close(Math.min(5000, rt.config.server.shutdownTimeoutMs));
    this.#unobserveStore();
    await this.#opened.close();
    this.logger.info('sluice gateway stopped');
    this.emit('closed');
  }
}
