import { createHash, timingSafeEqual } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import type { OverrideControl } from '../admission/override-control.js';
import { type GatewayProblem, Problems, sendProblem } from '../admission/problem-response.js';
import type { GatewayConfig } from '../config/gateway-config.js';
import { redactConfig } from '../config/redact.js';
import type { TenantQuota } from '../quota/tenant-quota.js';
import { ADMIN_MAX_CONNECTIONS, AdminConnections } from './admin-connections.js';
import { AdminProblems } from './admin-problems.js';
import { type MetricsSource, serveMetrics } from './health-endpoints.js';
import { KEY_FORMS, keyFormIssue } from './key-form.js';
import { serveOverrides } from './override-routes.js';

/** One bucket of a key, as the admin API shows it. */
export interface BucketView {
  readonly policy: string;
  readonly quota: number;
  readonly window: number;
  readonly burst: number;
  readonly remaining: number;
  readonly resetSeconds: number;
  /**
   * Tokens the bucket owes below zero after a cost settled from a response (`cost:`), to within one second of
   * refill; present only while it owes.
   */
  readonly debt?: number;
  /** The id of the `limit` override this bucket belongs to: requests of the key count here instead. */
  readonly override?: string;
}

/**
 * Pages the admin listener serves beside its API (the live dashboard). An interface rather than the dashboard
 * itself: the dashboard sits above the server layer and is handed in by the gateway.
 */
export interface AdminPages {
  /** Answers the page and its files, which need no token; false when the request is not for them. */
  serveAsset(req: IncomingMessage, res: ServerResponse): boolean;
  /**
   * Answers the data behind the token (checked before); false when the request is not for it. A method the route
   * does not take goes to `notAllowed` with the methods it does, so the listener answers it as every route does.
   */
  serveData(req: IncomingMessage, res: ServerResponse, notAllowed: (allow: string) => void): boolean;
  /** Ends open streams. */
  close(): void;
}

/** What the admin API needs from the gateway. */
export interface AdminTarget {
  readonly config: GatewayConfig;
  inspect(key: string): Promise<BucketView[]>;
  resetKey(key: string): Promise<void>;
  /** Tenant quota tracking, when configured. */
  readonly quota?: TenantQuota | undefined;
  /** Run-time overrides and blocks (`/overrides`, `/blocks`). */
  readonly overrides?: OverrideControl;
  /** The keys denied most often, as keyed hashes. */
  readonly topLimitedKeys?: {
    top(n: number): readonly { readonly hash: string; readonly policy: string; readonly count: number }[];
  };
  /**
   * The cap on proxy connections in force, shown as `server.maxConnections` in `GET /config` when the file does
   * not set it (the default derived from the open file limit).
   */
  readonly maxConnections?: number;
  /** The gateway's metrics, for `GET /metrics` (the same text as the proxy listener's `/metrics`). */
  readonly metrics?: MetricsSource['metrics'];
  /** The Prometheus text `GET /metrics` serves (with `--threads`, every thread's series aggregated). */
  scrape?(): Promise<string>;
}

/** The routes the admin API answers, listed in the body of its `not_found` problem. */
const ROUTES = [
  'GET /config',
  'GET /metrics',
  'GET /keys/<key>',
  'DELETE /keys/<key>',
  'GET /quota/tenants/<tenant>',
  'GET /quota/top?n=10',
  'GET /limited-keys/top?n=10',
  'GET /overrides',
  'PUT /overrides',
  'DELETE /overrides?id=<id>&reason=<why>',
  'GET /overrides/history',
  'GET /blocks',
];

/**
 * The longest the admin listener waits for a request's head. An operator's client sends it at once; a socket
 * trickling one holds a slot no longer than this (and gives it up sooner to a request with the token, see
 * {@link AdminConnections}).
 */
const HEADERS_TIMEOUT_MS = 5_000;

/** How often Node.js checks the head timeout (its default, 30 s, would let a slow head stay up to 35 s). */
const CONNECTIONS_CHECKING_INTERVAL_MS = 1_000;

/** How long an idle keep-alive connection stays open between requests (Node.js's default, set here). */
const KEEP_ALIVE_TIMEOUT_MS = 5_000;

/** Options of an {@link AdminServer} beyond its target and token; tests shorten the timeouts and caps. */
export interface AdminServerOptions {
  /** The head timeout; default 5 s. */
  readonly headersTimeoutMs?: number;
  /** How often the head timeout is checked; default 1 s. */
  readonly connectionsCheckingIntervalMs?: number;
  /** Connections held at once; default {@link ADMIN_MAX_CONNECTIONS}. */
  readonly maxConnections?: number;
  /** Connections of one peer address held at once; default 16 (`ADMIN_MAX_CONNECTIONS_PER_PEER`). */
  readonly maxConnectionsPerPeer?: number;
}

/** Rows of a top list when `?n=` is not given, and the most that may be asked. */
const TOP_DEFAULT = 10;
const TOP_MAX = 1000;

/**
 * The admin listener (127.0.0.1 by default): every request needs `Authorization: Bearer <admin.token>`,
 * compared in constant time.
 *
 * - `GET /keys/<key>`: the key's bucket under every policy (`<key>` URL-encoded, for example `ip%3A203.0.113.9`).
 * - `DELETE /keys/<key>`: reset the key under every policy and every `limit` override in force for it (204); a
 *   key the gateway never makes is a 400 naming the forms of keys.
 * - `GET /config`: the effective configuration, secrets redacted, with the `server.maxConnections` in force.
 * - `GET /metrics`: the Prometheus text of the proxy listener's `/metrics`, reachable while the proxy listener is
 *   at its connection cap (404 `metrics_disabled` when `metrics.enabled` is false).
 *
 * Every error is `application/problem+json` with a stable `code` (`unauthorized`, `not_found`,
 * `method_not_allowed`, `bad_request`, `quota_not_configured`, ...; see docs/errors.md).
 * - `GET /quota/tenants/<tenant>`: a tenant's usage over the quota window by endpoint category, with its quota
 *   and ratio (404 when quota tracking is not configured).
 * - `GET /quota/top?n=10`: the tenants with the most usage over the window, with the alert thresholds.
 * - `GET /limited-keys/top?n=10`: the keys denied most often, as keyed hashes, with their policy.
 * - `GET /dashboard/`: the live dashboard page and its bundle (no token: they hold no data; the page asks for
 *   the token), `GET /dashboard/events` (server-sent events) and `GET /dashboard/state` (token required).
 */
export class AdminServer {
  readonly #server: Server;
  readonly #token: Buffer;
  readonly #tokenName: string;
  readonly #connections: AdminConnections;

  /**
   * @param target - the gateway.
   * @param token - the bearer token.
   * @param dashboard - the live dashboard to serve, when wanted.
   * @param tokenName - who the token stands for in the audit log of overrides.
   * @param options - timeouts and caps (tests shorten them).
   */
  constructor(
    readonly target: AdminTarget,
    token: string,
    readonly dashboard?: AdminPages,
    tokenName = 'admin',
    options: AdminServerOptions = {},
  ) {
    this.#token = digest(token);
    this.#tokenName = tokenName;
    this.#connections = new AdminConnections({
      total: options.maxConnections ?? ADMIN_MAX_CONNECTIONS,
      ...(options.maxConnectionsPerPeer === undefined ? {} : { perPeer: options.maxConnectionsPerPeer }),
    });
    this.#server = createServer(
      {
        headersTimeout: options.headersTimeoutMs ?? HEADERS_TIMEOUT_MS,
        connectionsCheckingInterval:
          options.connectionsCheckingIntervalMs ?? CONNECTIONS_CHECKING_INTERVAL_MS,
        keepAliveTimeout: KEEP_ALIVE_TIMEOUT_MS,
      },
      (req, res) => void this.#handle(req, res),
    );
    // Before Node.js's own listener: a refused connection is destroyed before anything is read from it.
    this.#server.prependListener('connection', (socket: Socket) => this.#connections.admit(socket));
  }

  /** Listens and returns the port. */
  listen(host: string, port: number): Promise<number> {
    return new Promise((resolve, reject) => {
      this.#server.once('error', reject);
      this.#server.listen(port, host, () => {
        this.#server.off('error', reject);
        // A failed accept (EMFILE: no descriptor left) must not end the process: the connection is lost, the
        // listener goes on, and the proxy listener's warning reports the shortage.
        this.#server.on('error', () => undefined);
        resolve((this.#server.address() as AddressInfo).port);
      });
    });
  }

  /** Stops the listener. */
  close(): Promise<void> {
    this.dashboard?.close();
    return new Promise((resolve) => {
      if (!this.#server.listening) {
        resolve();
        return;
      }
      this.#server.close(() => resolve());
      this.#server.closeAllConnections();
    });
  }

  async #handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const send = (status: number, body?: unknown, extra: Record<string, string> = {}) => {
      const text = body === undefined ? '' : JSON.stringify(body, null, 2);
      res.writeHead(status, {
        ...extra,
        'content-type': 'application/json',
        'cache-control': 'no-store',
        'content-length': Buffer.byteLength(text),
      });
      res.end(text);
    };
    // The page and its bundle hold no data; everything they read goes through the token check below.
    if (this.dashboard?.serveAsset(req, res)) return;
    const target = req.url ?? '/';
    const instance = target.split('?', 1)[0];
    const problem = (p: GatewayProblem, headers: Record<string, string> = {}) =>
      sendProblem(res, p, instance, '', headers);
    if (!this.#authorized(req.headers.authorization)) {
      problem(AdminProblems.unauthorized(), { 'www-authenticate': 'Bearer realm="sluice-admin"' });
      return;
    }
    // This connection is the operator's: no connection without the token takes its place at the cap.
    this.#connections.vouch(req.socket);
    const notAllowed = (allow: string) => problem(AdminProblems.methodNotAllowed(allow), { allow });
    if (this.dashboard?.serveData(req, res, notAllowed)) return;
    // Bad input is the client's problem (400), never the server's: a target no URL parser accepts, a "%" that
    // does not start an escape in a key or tenant.
    const badRequest = (detail: string) => sendProblem(res, Problems.badRequest(detail), instance, '');
    const url = parseTarget(target);
    if (url === undefined) {
      badRequest('The request target must be a path starting with "/".');
      return;
    }
    try {
      const overrides = this.target.overrides;
      if (
        overrides !== undefined &&
        (await serveOverrides(req, res, url, overrides, this.#tokenName, send))
      ) {
        return;
      }
      if (url.pathname === '/config') {
        // HEAD is GET without the body (Node leaves it out), as on /metrics.
        if (req.method === 'GET' || req.method === 'HEAD') send(200, this.#effectiveConfig());
        else notAllowed('GET, HEAD');
        return;
      }
      if (url.pathname === '/metrics') {
        this.#metrics(req, res, problem, notAllowed);
        return;
      }
      if (url.pathname.startsWith('/quota/') || url.pathname === '/limited-keys/top') {
        if (req.method !== 'GET') {
          notAllowed('GET');
          return;
        }
        const n = topCount(url.searchParams.get('n'));
        if (n === undefined) {
          badRequest(`n must be an integer from 1 to ${TOP_MAX}`);
          return;
        }
        if (url.pathname === '/limited-keys/top') {
          const top = this.target.topLimitedKeys;
          send(200, { keys: top === undefined ? [] : top.top(n) });
          return;
        }
        const quota = this.target.quota;
        if (quota === undefined) {
          problem(AdminProblems.quotaNotConfigured());
          return;
        }
        const t = quota.tracker;
        if (url.pathname === '/quota/top') {
          send(200, {
            windowSeconds: t.windowSeconds,
            bucketSeconds: t.bucketSeconds,
            thresholds: t.thresholds,
            tenants: await t.topTenants(n),
          });
          return;
        }
        if (url.pathname.startsWith('/quota/tenants/') && url.pathname.length > 15) {
          send(200, await t.usage(decodeURIComponent(url.pathname.slice(15))));
          return;
        }
      }
      if (url.pathname.startsWith('/keys/') && url.pathname.length > 6) {
        const key = decodeURIComponent(url.pathname.slice(6));
        const issue = keyFormIssue(key);
        if (issue !== undefined && (req.method === 'GET' || req.method === 'DELETE')) {
          badRequest(
            `"${key}" is not a key the gateway makes (${issue}). Keys are ${KEY_FORMS}, URL-encoded.`,
          );
          return;
        }
        if (req.method === 'GET') {
          send(200, { key, buckets: await this.target.inspect(key) });
          return;
        }
        if (req.method === 'DELETE') {
          await this.target.resetKey(key);
          send(204);
          return;
        }
        notAllowed('GET, DELETE');
        return;
      }
      // The route list stays a member of the problem: a person trying the API reads what exists.
      sendProblem(
        res,
        AdminProblems.notFound(`No admin route is ${req.method ?? 'GET'} ${instance}; see routes.`),
        instance,
        '',
        {},
        { routes: ROUTES },
      );
    } catch (e) {
      if (e instanceof URIError) {
        badRequest('The path contains a "%" that does not start a valid UTF-8 escape (write "%" as "%25").');
        return;
      }
      problem(AdminProblems.internalError((e as Error).message));
    }
  }

  /** The configuration in effect, secrets redacted, with the connection cap in force when the file omits it. */
  #effectiveConfig(): unknown {
    const shown = redactConfig(this.target.config) as { server?: Record<string, unknown> };
    const cap = this.target.maxConnections;
    if (cap === undefined || shown.server === undefined || shown.server.maxConnections !== undefined)
      return shown;
    return { ...shown, server: { ...shown.server, maxConnections: cap } };
  }

  /**
   * `GET /metrics` (and `HEAD`): the proxy listener's metrics, behind the admin token like every admin route, so
   * that a scrape still reaches them while the proxy listener refuses connections at its cap.
   */
  #metrics(
    req: IncomingMessage,
    res: ServerResponse,
    problem: (p: GatewayProblem) => void,
    notAllowed: (allow: string) => void,
  ): void {
    const { metrics } = this.target;
    if (req.method !== 'GET' && req.method !== 'HEAD') notAllowed('GET, HEAD');
    else if (metrics === undefined || this.target.scrape === undefined || !this.target.config.metrics.enabled)
      problem(AdminProblems.metricsDisabled());
    else serveMetrics({ metrics, scrape: () => this.target.scrape?.() ?? Promise.resolve('') }, req, res);
  }

  #authorized(header: string | undefined): boolean {
    if (header === undefined || header.slice(0, 7).toLowerCase() !== 'bearer ') return false;
    // Comparing digests keeps the comparison constant-time whatever the length given.
    return timingSafeEqual(digest(header.slice(7).trim()), this.#token);
  }
}

function topCount(value: string | null): number | undefined {
  if (value === null) return TOP_DEFAULT;
  if (!/^[0-9]{1,4}$/.test(value)) return undefined;
  const n = Number(value);
  return n >= 1 && n <= TOP_MAX ? n : undefined;
}

function digest(s: string): Buffer {
  return createHash('sha256').update(s).digest();
}

/**
 * The URL of an origin-form request target, read as a path of this listener: a target starting with `//` stays
 * a path (not a host), and one no URL parser accepts gives `undefined`.
 */
function parseTarget(target: string): URL | undefined {
  if (!target.startsWith('/')) return undefined;
  try {
    return new URL(`http://admin${target}`);
  } catch {
    return undefined;
  }
}
