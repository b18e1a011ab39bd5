import type { IncomingMessage, ServerResponse } from 'node:http';
import type { GatewayConfig } from '../config/gateway-config.js';
import type { CloseRelay } from '../proxy/forward-state.js';
import { paceLeftover } from './pace-leftover.js';
import type { ProxyContext } from './proxy-context.js';

/** The request log's status of a request whose client closed the connection before any answer (NGINX's 499). */
const CLIENT_CLOSED_STATUS = 499;

const RUN = Symbol('sluice.requestRun');

type RunResponse = ServerResponse & { [RUN]?: RequestRun };

/**
 * One request of the proxy listener, from its start to its response's close: what the close needs (the
 * connection's line, the forwarded request's abort, the leftover body, the log line) in one object, read by one
 * listener function shared by every response, instead of a closure and its context per request. It is also the
 * close relay of the forwarded request (`onClose`) while that one is upstream.
 */
export class RequestRun implements CloseRelay {
  /** The request log's outcome (`proxied`, `limited`, `shed`, an upstream failure...). */
  outcome = 'proxied';
  /** The key admission decided on, for the log. */
  key: string | undefined = undefined;
  /** The caller's tier, for the log. */
  tier: string | undefined = undefined;
  /** Whether the request went upstream (its body is then the upstream's to read, not the gateway's to drop). */
  forwarded = false;
  /** The forwarded request's abort, set by the forwarding while it is upstream. */
  onClose: (() => void) | undefined = undefined;
  readonly #ctx: ProxyContext;
  readonly #req: IncomingMessage;
  readonly #res: ServerResponse;
  readonly #config: GatewayConfig;
  readonly #id: string;
  readonly #started: number;

  /**
   * Starts a request's run and listens for its response's close.
   *
   * @param ctx - the proxy listener.
   * @param req - the request.
   * @param res - its response.
   * @param config - the configuration in effect when the request started (a reload applies to the next one).
   * @param id - the request id.
   * @param started - `performance.now()` at its start, for the log's duration.
   */
  constructor(
    ctx: ProxyContext,
    req: IncomingMessage,
    res: ServerResponse,
    config: GatewayConfig,
    id: string,
    started: number,
  ) {
    this.#ctx = ctx;
    this.#req = req;
    this.#res = res;
    this.#config = config;
    this.#id = id;
    this.#started = started;
    (res as RunResponse)[RUN] = this;
    // `on`, not `once`: a response closes once, and `once` would wrap the listener and remove it again per
    // request. The response's only listener: the connection's line, the upstream request and the log are all
    // told from here.
    res.on('close', onResponseClose);
  }

  /**
   * The forwarding's outcome, as the upstream path learns it.
   *
   * @param outcome - the log's outcome.
   * @param bodyUnread - the request was refused before it was sent: its body, if any, is the gateway's to drop.
   */
  forwardingEnded(outcome: string, bodyUnread?: boolean): void {
    this.outcome = outcome;
    if (bodyUnread === true) this.forwarded = false;
  }

  /** The response has closed: the line, the forwarded request and the log learn it, once. */
  closed(): void {
    const req = this.#req;
    const res = this.#res;
    const c = this.#config;
    this.#ctx.end(req);
    this.onClose?.();
    // A body the gateway answered without forwarding (a denial, a health answer) is read and dropped by Node
    // before the connection serves another request: it keeps the pace a forwarded body must keep, or the
    // connection is closed, so a trickled leftover cannot hold a socket without end.
    if (!this.forwarded && !req.complete && !req.destroyed) paceLeftover(req, c.server);
    // Closed before any answer went out: the client left (an abandoned upload, a wait it gave up on). Logged as
    // NGINX logs it, 499, not as the 200 the response object starts with and never sent.
    const answered = res.headersSent;
    const settled = answered ? this.outcome : 'client_closed';
    const log = this.#ctx.requestLog;
    if (!log.wants(c.logging.requests, settled)) return;
    log.write({
      reqId: this.#id,
      method: req.method ?? 'GET',
      url: req.url ?? '/',
      status: answered ? res.statusCode : CLIENT_CLOSED_STATUS,
      ms: Math.round((performance.now() - this.#started) * 100) / 100,
      outcome: settled,
      key: this.key,
      tier: this.tier,
    });
  }
}

/** The one close listener of every proxied response: `this` is the response, which knows its run. */
function onResponseClose(this: RunResponse): void {
  this[RUN]?.closed();
}
