import type { GatewayConfig } from '../config/gateway-config.js';
import type { DecisionHost } from '../decision/decide-request.js';
import { DecisionServer } from '../decision/decision-server.js';
import { EnvoyRateLimitServer } from '../envoy/grpc-server.js';

/** The listeners that let other proxies ask Sluice: the HTTP decision API and the Envoy rate limit service. */
export interface RateLimitServices {
  /** The decision API, when `decision:` is configured. */
  readonly decision: DecisionServer | undefined;
  /** The Envoy service, when `envoy:` is configured. */
  readonly envoy: EnvoyRateLimitServer | undefined;
  /** Closes both listeners. */
  close(): Promise<void>;
}

/**
 * Starts the listeners the configuration asks for, beside a running gateway (`sluice serve` calls this after
 * `Gateway.start`). They decide with the gateway's store, policies and metrics, and follow its reloads; their
 * own addresses take effect at start only.
 *
 * @param host - the running gateway.
 * @param options - `now`: wall-clock milliseconds for reset epochs (default `Date.now`).
 * @throws listen errors as Node and gRPC report them; whatever started is closed first.
 *
 * @example
 * ```ts
 * const gateway = await Gateway.start({ config });
 * const services = await startRateLimitServices(gateway);
 * ```
 */
export async function startRateLimitServices(
  host: DecisionHost & { readonly config: GatewayConfig },
  options: { readonly now?: () => number } = {},
): Promise<RateLimitServices> {
  const c = host.config;
  let decision: DecisionServer | undefined;
  let envoy: EnvoyRateLimitServer | undefined;
  const close = async () => {
    await Promise.all([decision?.close(), envoy?.close()]);
  };
  try {
    if (c.decision !== undefined)
      decision = await DecisionServer.start({ host, config: c.decision, now: options.now });
    if (c.envoy !== undefined)
      envoy = await EnvoyRateLimitServer.start({ host, config: c.envoy, now: options.now });
  } catch (e) {
    await close();
    throw e;
  }
  return { decision, envoy, close };
}
