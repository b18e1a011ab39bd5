import type { GatewayConfig } from '../config/gateway-config.js';
import { Dashboard, type DashboardSource, type RateWindow, type TopKeysSource } from '../dashboard/index.js';
import type { LimitedKeyFacts } from '../dashboard/limited-key-facts.js';
import type { DecisionHost } from '../decision/decide-request.js';
import { DecisionServer } from '../decision/decision-server.js';
import { EnvoyRateLimitServer } from '../envoy/grpc-server.js';
import { AdminServer, type AdminTarget } from '../server/admin-server.js';
import { listenAs } from './listen-error.js';

/** What the listeners beside the proxy read of the gateway. */
export type SideListenerHost = DecisionHost &
  AdminTarget &
  DashboardSource & {
    /** The dashboard's per-second counts. */
    readonly rates: RateWindow;
    /** The keys denied most often, over every thread. */
    readonly topLimitedKeys: TopKeysSource;
    /** What each limited key is, joined to the top list by hash. */
    readonly limitedKeyFacts?: LimitedKeyFacts;
  };

/**
 * The gateway's listeners beside the proxy, each started only when its section is configured: the admin API with
 * the dashboard (`admin:`), the HTTP decision API (`decision:`) and the Envoy rate limit service (`envoy:`). They
 * decide with the gateway's store, policies and metrics and follow its reloads; their addresses are bound at
 * start.
 */
export class SideListeners {
  /** The admin listener's base URL, once started. */
  adminUrl: string | undefined;
  /** The decision API's base URL, once started. */
  decisionUrl: string | undefined;
  /** `host:port` of the Envoy service, once started. */
  envoyAddress: string | undefined;
  readonly #host: SideListenerHost;
  readonly #now: () => number;
  readonly #admin: AdminServer | undefined;
  #decision: DecisionServer | undefined;
  #envoy: EnvoyRateLimitServer | undefined;

  /**
   * @param host - the gateway.
   * @param config - the configuration at start (its admin token is read here, once).
   * @param now - wall-clock milliseconds for reset epochs.
   */
  constructor(host: SideListenerHost, config: GatewayConfig, now: () => number) {
    this.#host = host;
    this.#now = now;
    const quota = host.quota?.tracker;
    this.#admin =
      config.admin === undefined
        ? undefined
        : new AdminServer(
            host,
            config.admin.token,
            new Dashboard(host, {
              rates: host.rates,
              topLimitedKeys: host.topLimitedKeys,
              ...(host.limitedKeyFacts === undefined ? {} : { keyFacts: host.limitedKeyFacts }),
              ...(quota === undefined ? {} : { quota }),
            }),
            config.admin.tokenName,
          );
  }

  /**
   * Starts every configured listener, one after the other.
   *
   * @throws the listen error as Node or gRPC reports it, after the option of its port (`admin.port (the admin
   *   listener): listen EADDRINUSE: ...`); the caller closes whatever started.
   */
  async start(config: GatewayConfig): Promise<void> {
    const admin = this.#admin;
    if (admin !== undefined && config.admin !== undefined) {
      const { host, port } = config.admin;
      const bound = await listenAs('admin.port', 'the admin listener', () => admin.listen(host, port));
      this.adminUrl = `http://${hostForUrl(host)}:${bound}`;
    }
    const decision = config.decision;
    if (decision !== undefined) {
      this.#decision = await listenAs('decision.port', 'the decision API', () =>
        DecisionServer.start({ host: this.#host, config: decision }),
      );
      this.decisionUrl = this.#decision.url;
    }
    const envoy = config.envoy;
    if (envoy !== undefined) {
      this.#envoy = await listenAs('envoy.port', 'the Envoy rate limit service', () =>
        EnvoyRateLimitServer.start({ host: this.#host, config: envoy, now: this.#now }),
      );
      this.envoyAddress = this.#envoy.address;
    }
  }

  /** Closes every listener that started; a decision is short, so none drains. */
  async close(): Promise<void> {
    await Promise.all([this.#admin?.close(), this.#decision?.close(), this.#envoy?.close()]);
  }
}

function hostForUrl(host: string): string {
  return host.includes(':') ? `[${host}]` : host;
}
