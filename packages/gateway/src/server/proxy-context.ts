import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';
import { type Admission, type AdmissionHost, AdmittedRequest, admitOwn } from '../admission/admit-request.js';
import type { Runtime } from '../admission/runtime.js';
import type { RequestLog } from '../log/request-log.js';
import type { UpstreamRefusal } from '../metrics/tapped-metrics.js';
import type { HealthSource } from './health-endpoints.js';

/**
 * What the proxy listener needs of the gateway: admission's needs and its own endpoints' (`/metrics`), and where
 * the requests it could not send upstream are counted (the gateway's `TappedMetrics`).
 */
export type ProxyHost = AdmissionHost &
  HealthSource & {
    readonly metrics: { readonly recordUpstreamRefusal?: (reason: UpstreamRefusal) => void };
  };

/** What the request pipeline and the upgrade path share of the proxy listener that runs them. */
export interface ProxyContext {
  /** The gateway: the configuration in effect, metrics, store, logger and quota that admission uses. */
  readonly host: ProxyHost;
  /** Wall-clock milliseconds for `X-RateLimit-Reset` and the problem's `reset`. */
  readonly now: () => number;
  /** True once shutdown began: answers close their connection, `/ready` says draining, upgrades are refused. */
  readonly draining: boolean;
  /**
   * Whether a connection was accepted after shutdown began: the listener stays open during the drain for the
   * health endpoints only, and answers anything else on such a connection with the 503 `shutting_down`.
   */
  acceptedWhileDraining(socket: Duplex): boolean;
  /** Counts a request in flight until {@link ProxyContext.end}; shutdown waits for none to be left. */
  begin(): void;
  /**
   * The request's response has closed: the next request of its connection (one pipelined behind it) starts, and
   * only then does this one stop counting, so a drain never sees the connection's line as done.
   */
  end(req: IncomingMessage): void;
  /** Keeps an upgraded connection, so shutdown can close it. */
  keepUpgraded(socket: Duplex): void;
  /** The request log of the host's logger: which requests get a line (`logging.requests`), and the line. */
  readonly requestLog: RequestLog;
}

/**
 * Admits a request of the gateway's own listener through the one admission function, with what only this
 * listener knows: the client address behind trusted proxies, whether the peer may send identity headers, and the
 * TLS socket for the mTLS exemption, and the response whose early close (the client went away) ends a wait in a
 * queue. `clientIp` is `Runtime.clientIp` of the request, resolved once by the caller, which forwards with it too.
 */
export function admitOwnRequest(
  ctx: ProxyContext,
  rt: Runtime,
  req: IncomingMessage,
  method: string,
  path: string,
  id: string,
  clientIp: string | undefined,
  res?: ServerResponse,
  bodyForReserve?: Uint8Array,
): Admission | Promise<Admission> {
  // The library's shape at once: one object per request, not a description copied into it.
  return admitOwn(
    ctx.host,
    new AdmittedRequest(
      method,
      path,
      req.headers,
      clientIp,
      rt.trustedPeer(req.socket.remoteAddress),
      1,
      id,
      req.socket,
      undefined,
      // Its early close ends a wait in a queue; read only for a request that waits.
      res,
      bodyForReserve,
    ),
  );
}
