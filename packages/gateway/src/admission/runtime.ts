import type { Clock, OverrideStore, RateLimitStore } from 'sluice';
import {
  type ClientIpResolver,
  createClientIpResolver,
  createHttpLimiter,
  type HttpLimiter,
  type HttpLimiterOptions,
  type IpRange,
  inRanges,
  normalizeIp,
  parseTrustedProxies,
  problemTypeResolver,
} from 'sluice/http';
import type { GatewayConfig } from '../config/gateway-config.js';
import { RequestIdentifier } from '../identity/identify-request.js';
import type { Identity as CallerIdentity } from '../identity/identity.js';
import { GatewayLimits } from '../limits/gateway-limits.js';
import { ReserveBodyScope } from '../limits/reserve-body-scope.js';
import type { UpstreamProxy, UpstreamProxyOptions } from '../proxy/upstream-proxy.js';
import { QuotaCategories } from '../quota/quota-categories.js';
import { CostHeaderScope } from './cost-header-scope.js';
import { callerIdentifier, type GatewayRequest } from './identify-caller.js';
import { SharedInFlight } from './in-flight-count.js';
import { MtlsSubjects } from './mtls-subjects.js';
import { OverloadStage } from './overload-stage.js';

/** What a runtime reports to the gateway that owns it. */
export interface RuntimeEvents {
  /** A store threw instead of deciding; the request was answered by the failure mode (`open` admits, else 503). */
  readonly onStoreError?: (error: unknown) => void;
  /** Wall-clock milliseconds for `X-RateLimit-Reset` and the problem's `reset`; default `Date.now`. */
  readonly now?: () => number;
  /** The clock queued requests wait on: the store's (a `ManualClock` in tests); default monotonic time. */
  readonly clock?: Clock;
  /** Where queue lengths and wait times go. */
  readonly queueMetrics?: HttpLimiterOptions['queueMetrics'];
  /** Where costs settled from responses go: units charged per policy, answers whose cost could not be read. */
  readonly settleMetrics?: HttpLimiterOptions['settleMetrics'];
  /**
   * An identity already known for a request, used instead of the identity sources: `sluice replay` reads it from
   * an access log line. Never set by the gateway, whose requests are identified by their credentials.
   */
  readonly recordedIdentity?: (r: GatewayRequest) => CallerIdentity | undefined;
  /**
   * Verdicts are read, never sent (`sluice replay`): a denial carries no problem body (the library's
   * `denialBodies: false`), which would otherwise be built for every limited line. Never set by the gateway.
   */
  readonly decisionsOnly?: boolean;
  /** Run-time overrides and blocks (the store's), applied by every runtime across reloads. */
  readonly overrides?: OverrideStore;
  /**
   * Builds the pool to `upstream.url`: the gateway passes the proxy's. Without it a runtime forwards nothing
   * (its `proxy` stays `undefined`), so what only decides (`sluice replay`, validation) never loads the HTTP
   * client.
   */
  readonly upstreamPool?: (options: UpstreamProxyOptions) => UpstreamProxy;
  /** The word load shedding counts requests in flight on, shared by the threads of `--threads`; else its own. */
  readonly overloadCount?: SharedArrayBuffer | undefined;
}

/**
 * Everything a request needs that comes from one configuration, built once and swapped as a whole on reload,
 * so that a request in flight keeps seeing the configuration it started with. Admission itself is
 * `sluice/http`'s: {@link Runtime.http} is built from the configuration's limits, with the gateway's identity
 * sources and mTLS exemption as its hooks.
 */
export class Runtime {
  readonly config: GatewayConfig;
  /** The policies of this configuration and what the admin API needs of them. */
  readonly plan: GatewayLimits;
  /**
   * Which requests have their body read before admission for a reservation (`cost.reserve.field`), and how much
   * of it; `undefined` reads none.
   */
  readonly reserveBody: ReserveBodyScope | undefined;
  /**
   * Which exempt requests have an upstream cost header removed from their answer (a limited one's settlement
   * removes it); `undefined` when no rule removes one.
   */
  readonly costHeaders: CostHeaderScope | undefined;
  /** The one admission path: proxy, upgrades, decision API. */
  readonly http: HttpLimiter<GatewayRequest>;
  readonly identifier: RequestIdentifier;
  readonly proxy: UpstreamProxy | undefined;
  readonly clientIp: ClientIpResolver;
  /** Builds problem type URIs from `problems.typeBase`; `undefined` for `about:blank`. */
  readonly problemType: ((slug: string) => string) | undefined;
  /** The endpoint categories of quota tracking, or `undefined` when the `quota:` section is absent. */
  readonly quotaCategories: QuotaCategories | undefined;
  /** The events this runtime reports; a reload passes them on. */
  readonly events: RuntimeEvents;
  /** Load shedding (`overload:`), the admission stage after the limits; `undefined` when the section is absent. */
  readonly overload: OverloadStage | undefined;
  readonly #trusted: readonly IpRange[];

  /**
   * @param config - the resolved configuration.
   * @param store - the gateway's store (shared across reloads).
   * @param previous - the runtime being replaced: its unchanged policies (and so their buckets), its events and
   * its upstream pool, when the upstream settings did not change, are kept.
   * @param events - what to report to the gateway; default the previous runtime's.
   * @throws SluiceError `ERR_INVALID_CONFIG` when a JWKS or API key file is unusable.
   */
  constructor(config: GatewayConfig, store: RateLimitStore, previous?: Runtime, events?: RuntimeEvents) {
    this.config = config;
    this.events = events ?? previous?.events ?? {};
    this.plan = new GatewayLimits(config, store, previous?.plan, this.events.clock);
    this.reserveBody = ReserveBodyScope.of(config);
    this.costHeaders = CostHeaderScope.of(config);
    this.identifier = new RequestIdentifier(config);
    this.problemType = problemTypeResolver(config.problems.typeBase);
    this.quotaCategories = config.quota === undefined ? undefined : new QuotaCategories(config.quota);
    const o = config.overload;
    this.overload =
      o === undefined
        ? undefined
        : new OverloadStage(config, o, previous?.overload, sharedCount(this.events.overloadCount));
    this.#trusted = parseTrustedProxies('server.trustedProxies', config.server.trustedProxies);
    this.clientIp = createClientIpResolver({
      trustedProxies: config.server.trustedProxies,
      proxyHeader: config.server.proxyHeader,
    });
    const mtls = new MtlsSubjects(config.exemptions.mtlsSubjects);
    const plan = this.plan;
    const onStoreError = this.events.onStoreError;
    this.http = createHttpLimiter<GatewayRequest>({
      limiter: plan.limiter,
      ...plan.options,
      exempt: {
        ...plan.options.exempt,
        ...(mtls.empty ? {} : { when: (r) => mtls.matches(r.socket) && 'mtls' }),
      },
      publicAuth: {
        ...plan.options.publicAuth!,
        hasCredentials: (r) => this.identifier.credentials(r.headers) !== undefined,
      },
      identify: callerIdentifier(
        this.identifier,
        (t) => plan.tier(t) !== undefined,
        config.defaultTier,
        this.events.recordedIdentity,
      ),
      ...(onStoreError === undefined ? {} : { onStoreError }),
      ...(this.events.now === undefined ? {} : { wallClock: this.events.now }),
      ...(this.events.queueMetrics === undefined ? {} : { queueMetrics: this.events.queueMetrics }),
      ...(this.events.settleMetrics === undefined ? {} : { settleMetrics: this.events.settleMetrics }),
      ...(this.events.overrides === undefined ? {} : { overrides: this.events.overrides }),
      ...(this.events.decisionsOnly === true ? { denialBodies: false } : {}),
    });
    const u = config.upstream;
    const pool = this.events.upstreamPool;
    if (u.url === undefined || pool === undefined) this.proxy = undefined;
    else if (previous?.proxy !== undefined && sameUpstream(previous.config, config))
      this.proxy = previous.proxy;
    else
      this.proxy = pool({
        url: u.url,
        connectTimeoutMs: u.connectTimeoutMs,
        responseTimeoutMs: u.responseTimeoutMs,
        bodyTimeoutMs: u.bodyTimeoutMs,
        connections: u.connections,
      });
  }

  /** True when the direct peer is a trusted proxy, whose identity headers are honoured. */
  trustedPeer(peer: string | undefined): boolean {
    if (peer === undefined || this.#trusted.length === 0) return false;
    const ip = normalizeIp(peer);
    return ip !== undefined && inRanges(ip, this.#trusted);
  }
}

function sameUpstream(a: GatewayConfig, b: GatewayConfig): boolean {
  return JSON.stringify(poolSettings(a)) === JSON.stringify(poolSettings(b));
}

/**
 * The `upstream:` settings the pool is built with. `queueTimeout`, `maxBodies` and `maxBodiesPerClient` are read
 * per request, so a reload that changes only them keeps the pool, its connections and its count of bodies per
 * client.
 */
function poolSettings(
  c: GatewayConfig,
): Omit<GatewayConfig['upstream'], 'queueTimeoutMs' | 'maxBodies' | 'maxBodiesPerClient'> {
  const { queueTimeoutMs: _wait, maxBodies: _bodies, maxBodiesPerClient: _cap, ...pool } = c.upstream;
  return pool;
}

/** The shared count of requests in flight on `buffer`, when the threads share one. */
function sharedCount(buffer: SharedArrayBuffer | undefined): SharedInFlight | undefined {
  return buffer === undefined ? undefined : new SharedInFlight(buffer);
}
