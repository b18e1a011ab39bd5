import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import {
  closesAfterDenial,
  type IpRange,
  inRanges,
  normalizeIp,
  PROBLEM_CONTENT_TYPE,
  parseTrustedProxies,
} from 'sluice/http';
import { PeerGate } from '../admission/peer-gate.js';
import { type GatewayProblem, problemBody } from '../admission/problem-response.js';
import { requestIdOf } from '../admission/request-id.js';
import type { DecisionConfig } from '../config/decision-config.js';
import { type DecisionAnswer, type DecisionHost, decideRequest } from './decide-request.js';

/** Options of {@link DecisionServer.start}. */
export interface DecisionServerOptions {
  /** The running gateway whose policies, store and metrics decide. */
  readonly host: DecisionHost;
  /** The `decision:` section. */
  readonly config: DecisionConfig;
  /** The head timeout; default 10 s (tests shorten it). */
  readonly headersTimeoutMs?: number;
  /** How often the head timeout is checked; default 1 s (tests shorten it). */
  readonly connectionsCheckingIntervalMs?: number;
}

/**
 * The longest the decision listener waits for a request's head. A proxy sends it whole at once; a socket
 * trickling one is closed after this (Node.js's default is 60 s, checked every 30 s).
 */
const HEADERS_TIMEOUT_MS = 10_000;

/** How often Node.js checks the head timeout. */
const CONNECTIONS_CHECKING_INTERVAL_MS = 1_000;

/** The largest cost a decision request may ask for; far above any sane policy, small enough to stay exact. */
const MAX_COST = 1_000_000;
const METHOD = /^[A-Z][A-Z0-9_-]{0,31}$/;

/**
 * The HTTP decision API on its own listener: a proxy (NGINX `auth_request`, Traefik ForwardAuth, Caddy
 * `forward_auth`) describes the original request in headers and gets 200 to allow or 429 to deny (401 for bad
 * credentials, 503 when the store is down and the failure mode is closed), with the RateLimit, legacy and
 * Retry-After headers to copy onto its response. Refusals carry the problem body, and a copy of it on one line in
 * the problem header, because NGINX discards the body of an `auth_request` answer.
 *
 * Request headers read (names configurable): `X-Original-Method` (else the request's own method, which NGINX
 * subrequests inherit), `X-Original-URI` (required), `X-Real-IP` (else the peer, which then keys every client as
 * the proxy: stricter, never looser), `X-RateLimit-Cost` (default 1), and the gateway's request id header.
 *
 * @example
 * ```ts
 * const api = await DecisionServer.start({ host: gateway, config: gateway.config.decision! });
 * // curl -H 'X-Original-URI: /api/x' -H 'X-Real-IP: 203.0.113.9' http://127.0.0.1:8082/decide
 * ```
 */
export class DecisionServer {
  /** Base URL of the listener, for example `http://127.0.0.1:8082`. */
  readonly url: string;
  /** The decision endpoint's full URL. */
  readonly endpoint: string;
  readonly #server: Server;

  private constructor(server: Server, url: string, path: string) {
    this.#server = server;
    this.url = url;
    this.endpoint = url + path;
  }

  /**
   * Listens on `decision.host:decision.port`.
   *
   * @throws listen errors as Node reports them (for example `EADDRINUSE`); `ERR_INVALID_OPTION` for an invalid
   * peer list (already rejected by the configuration loader).
   */
  static async start(options: DecisionServerOptions): Promise<DecisionServer> {
    const { config, host } = options;
    // Everything but the address follows reloads: the section in effect is read per request, its peers parsed
    // once per configuration.
    let current = { config, peers: parseTrustedProxies('decision.allowedPeers', config.allowedPeers) };
    const settings = () => {
      const live = host.runtime.config.decision;
      if (live !== undefined && live !== current.config) {
        current = { config: live, peers: parseTrustedProxies('decision.allowedPeers', live.allowedPeers) };
      }
      return current;
    };
    const server = createServer(
      {
        headersTimeout: options.headersTimeoutMs ?? HEADERS_TIMEOUT_MS,
        connectionsCheckingInterval:
          options.connectionsCheckingIntervalMs ?? CONNECTIONS_CHECKING_INTERVAL_MS,
        keepAliveTimeout: 65_000,
      },
      (req, res) => {
        const { config: c, peers } = settings();
        handle(req, res, host, c, peers).catch((e: unknown) => {
          host.logger.error({ err: e }, 'decision request failed');
          if (!res.headersSent) {
            sendProblem(res, 500, 'Internal Server Error', 'The decision failed.', 'internal_error');
          } else res.destroy();
        });
      },
    );
    // Before Node.js's own listener: a peer outside allowedPeers, or a connection past the cap, is closed before
    // a byte is read, so that it holds no descriptor for long and no parser at all.
    const gate = new PeerGate({
      section: 'decision',
      logger: host.logger,
      settings: () => {
        const { config: c, peers } = settings();
        return { peers, maxConnections: c.maxConnections };
      },
    });
    server.prependListener('connection', (socket: Socket) => gate.admit(socket));
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(config.port, config.host, () => {
        server.off('error', reject);
        // A failed accept (EMFILE: no descriptor left) must not end the process and every listener with it.
        server.on('error', (e: NodeJS.ErrnoException) =>
          host.logger.warn({ code: e.code }, 'decision API: accept failed'),
        );
        resolve();
      });
    });
    const port = (server.address() as AddressInfo).port;
    const h = config.host.includes(':') ? `[${config.host}]` : config.host;
    host.logger.info({ url: `http://${h}:${port}${config.path}` }, 'sluice decision API listening');
    return new DecisionServer(server, `http://${h}:${port}`, config.path);
  }

  /** Stops listening and closes every connection (a decision is short; nothing is worth draining). */
  close(): Promise<void> {
    return new Promise((resolve) => {
      this.#server.close(() => resolve());
      this.#server.closeAllConnections();
    });
  }
}

async function handle(
  req: IncomingMessage,
  res: ServerResponse,
  host: DecisionHost,
  config: DecisionConfig,
  peers: readonly IpRange[],
): Promise<void> {
  // auth_request sends no body; a small one is read and dropped so the connection stays usable, while a large
  // or chunked one is not worth reading: the answer says Connection: close and Node closes once it is sent.
  if (!req.complete && closesAfterDenial(req.headers)) res.setHeader('connection', 'close');
  else req.resume();
  const target = req.url ?? '/';
  const q = target.indexOf('?');
  if ((q < 0 ? target : target.slice(0, q)) !== config.path) {
    sendProblem(res, 404, 'Not Found', `The decision API answers at ${config.path}.`, 'not_found');
    return;
  }
  const peer = req.socket.remoteAddress === undefined ? undefined : normalizeIp(req.socket.remoteAddress);
  if (peer === undefined || !inRanges(peer, peers)) {
    sendProblem(
      res,
      403,
      'Forbidden',
      'This peer may not ask for decisions (decision.allowedPeers).',
      'forbidden',
    );
    return;
  }
  const h = config.headers;
  const uri = single(req.headers[h.uri]);
  if (uri === undefined || uri.charCodeAt(0) !== 47) {
    sendProblem(
      res,
      400,
      'Bad Request',
      `The ${h.uri} header must hold the original request target (a path starting with /).`,
      'bad_request',
    );
    return;
  }
  const method = (single(req.headers[h.method]) ?? req.method ?? 'GET').toUpperCase();
  if (!METHOD.test(method)) {
    sendProblem(res, 400, 'Bad Request', `The ${h.method} header is not a method.`, 'bad_request');
    return;
  }
  let cost = 1;
  const costText = single(req.headers[h.cost]);
  if (costText !== undefined) {
    cost = /^[0-9]{1,7}$/.test(costText) ? Number(costText) : 0;
    if (cost < 1 || cost > MAX_COST) {
      sendProblem(
        res,
        400,
        'Bad Request',
        `The ${h.cost} header must be an integer from 1 to ${MAX_COST}.`,
        'bad_request',
      );
      return;
    }
  }
  const given = single(req.headers[h.clientAddress]);
  const clientIp = (given === undefined ? undefined : normalizeIp(given)) ?? peer;
  const rt = host.runtime;
  const answer = await decideRequest(host, {
    method,
    // Admission makes the target canonical (and refuses what cannot be matched safely), like the proxy's.
    path: uri,
    headers: req.headers,
    clientIp,
    trustIdentityHeaders: config.trustIdentityHeaders,
    cost,
    correlationId: requestIdOf(req.headers[rt.config.server.requestIdHeader]),
  });
  host.logger.debug(
    { method, uri, status: answer.status, outcome: answer.outcome, key: answer.key, tier: answer.tier },
    'decision',
  );
  respond(res, answer, config);
}

function respond(res: ServerResponse, answer: DecisionAnswer, config: DecisionConfig): void {
  for (const [k, v] of answer.headers) res.setHeader(k, v);
  res.setHeader('cache-control', 'no-store');
  if (answer.body === undefined) {
    // 200 rather than 204: some forward-auth proxies treat only 200 as success.
    res.writeHead(200, { 'content-length': 0 });
    res.end();
    return;
  }
  res.setHeader(config.headers.problem, asciiHeader(answer.body));
  res.writeHead(answer.status, {
    'content-type': PROBLEM_CONTENT_TYPE,
    'content-length': Buffer.byteLength(answer.body),
  });
  res.end(answer.body);
}

/**
 * The JSON text with every character outside printable ASCII escaped as `\uXXXX`: still the same JSON value, and
 * now a valid header value whatever the path held.
 */
export function asciiHeader(json: string): string {
  return json.replace(/[^\x20-\x7e]/g, (ch) => `\\u${ch.charCodeAt(0).toString(16).padStart(4, '0')}`);
}

/** Answers the asking proxy itself (bad request, wrong peer, wrong path) in the gateway's problem shape. */
function sendProblem(res: ServerResponse, status: number, title: string, detail: string, code: string): void {
  const body = problemBody({ status, title, detail, code } satisfies GatewayProblem, '');
  res.writeHead(status, {
    'content-type': PROBLEM_CONTENT_TYPE,
    'content-length': Buffer.byteLength(body),
    'cache-control': 'no-store',
  });
  res.end(body);
}

function single(v: string | string[] | undefined): string | undefined {
  const s = Array.isArray(v) ? v[0] : v;
  if (s === undefined) return undefined;
  const t = s.trim();
  return t === '' ? undefined : t;
}
