import type { RateLimitStore } from 'sluice';
import {
  type ClientIpResolver,
  createClientIpResolver,
  type IpRange,
  inRanges,
  normalizeIp,
  parseTrustedProxies,
  problemTypeResolver,
} from 'sluice/http';
import type { GatewayConfig } from '../config/gateway-config.js';
import { RequestIdentifier } from '../identity/identify-request.js';
import { LimitPlan } from '../limits/limit-plan.js';
import { UpstreamProxy } from '../proxy/upstream-proxy.js';
import { QuotaCategories } from '../quota/quota-categories.js';
import { ExemptionRules } from './exemption-rules.js';

/**
 * Everything a request needs that comes from one configuration, built once and swapped as a whole on reload,
 * so that a request in flight keeps seeing the configuration it started with.
 */
export class Runtime {
  readonly config: GatewayConfig;
  readonly plan: LimitPlan;
  readonly identifier: RequestIdentifier;
  readonly exemptions: ExemptionRules;
  readonly proxy: UpstreamProxy | undefined;
  readonly clientIp: ClientIpResolver;
  /** Builds problem type URIs from `problems.typeBase`; `undefined` for `about:blank`. */
  readonly problemType: ((slug: string) => string) | undefined;
  /** The endpoint categories of quota tracking, or `undefined` when the `quota:` section is absent. */
  readonly quotaCategories: QuotaCategories | undefined;
  readonly #trusted: readonly IpRange[];

  /**
   * @param config - the resolved configuration.
   * @param store - the gateway's store (shared across reloads).
   * @param previous - the runtime being replaced: its unchanged policies (and so their buckets) and its upstream
   * pool, when the upstream settings did not change, are kept.
   * @throws SluiceError `ERR_INVALID_CONFIG` when a JWKS or API key file is unusable.
   */
  constructor(config: GatewayConfig, store: RateLimitStore, previous?: Runtime) {
    this.config = config;
    this.plan = new LimitPlan(config, store, previous?.plan);
    this.identifier = new RequestIdentifier(config);
    this.exemptions = new ExemptionRules(config);
    this.problemType = problemTypeResolver(config.problems.typeBase);
    this.quotaCategories = config.quota === undefined ? undefined : new QuotaCategories(config.quota);
    this.#trusted = parseTrustedProxies('server.trustedProxies', config.server.trustedProxies);
    this.clientIp = createClientIpResolver({
      trustedProxies: config.server.trustedProxies,
      proxyHeader: config.server.proxyHeader,
    });
    const u = config.upstream;
    if (u.url === undefined) this.proxy = undefined;
    else if (previous?.proxy !== undefined && sameUpstream(previous.config, config))
      this.proxy = previous.proxy;
    else
      this.proxy = new UpstreamProxy({
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
  return JSON.stringify(a.upstream) === JSON.stringify(b.upstream);
}
