import { EventEmitter } from 'node:events';
import { type FSWatcher, readFileSync, watch } from 'node:fs';
import {
  createServer as createHttpServer,
  type IncomingMessage,
  type OutgoingHttpHeaders,
  type Server,
  type ServerResponse,
} from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import { basename, dirname } from 'node:path';
import type { Duplex } from 'node:stream';
import type { Clock, Decision, RateLimitStore } from 'sluice';
import { isPromiseLike } from 'sluice/http';
import { metricsHandler, type PrometheusMetrics } from 'sluice/prometheus';
import { TopLimitedKeys, wallClock } from 'sluice/quota';
import type { GatewayConfig } from '../config/gateway-config.js';
import type { ConfigOverrides } from '../config/load-config.js';
import { loadConfigFile } from '../config/load-config.js';
import type { Violation } from '../config/violation.js';
import { Dashboard, RateWindow, TappedMetrics } from '../dashboard/index.js';
import { normalizePath } from '../limits/normalize-path.js';
import { createLogger, type Logger } from '../log/create-logger.js';
import { upstreamRequestHeaders } from '../proxy/forward-headers.js';
import { TenantQuota } from '../quota/tenant-quota.js';
import { createStore, type OpenedStore } from '../store/create-store.js';
import { AdminServer, type BucketView } from './admin-server.js';
import { type Admission, admitRequest } from './admit-request.js';
import { EXEMPT_REASONS } from './exemption-rules.js';
import {
  type GatewayProblem,
  Problems,
  problemBody,
  sendProblem,
  writeRawResponse,
} from './problem-response.js';
import { requestIdOf } from './request-id.js';
import { Runtime } from './runtime.js';

/** A key's bucket as the admin API and {@link Gateway.inspect} show it. */
export type { BucketView };

/** Options of {@link Gateway.start}. */
export interface GatewayOptions {
  /** The resolved configuration (from `loadConfigFile`). */
  readonly config: GatewayConfig;
  /** The file to reload on SIGHUP or change; default `config.file`. */
  readonly configFile?: string;
  /** Command-line values re-applied on every reload, so a flag keeps winning over the file. */
  readonly overrides?: ConfigOverrides;
  /** Variables for `${NAME}` on reload; default `process.env`. */
  readonly env?: Readonly<Record<string, string | undefined>>;
  /** The logger; default pino on standard output at `logging.level`. */
  readonly logger?: Logger;
  /** The store's clock (a `ManualClock` in tests); default monotonic time. Only the memory store uses it. */
  readonly clock?: Clock;
  /** Wall-clock milliseconds for `X-RateLimit-Reset` and the problem's `reset`; default `Date.now`. */
  readonly now?: () => number;
  /** Watch the file for changes; default `config.reload.watch` when there is a file. */
  readonly watch?: boolean;
}

/** The outcome of a reload. */
export interface ReloadResult {
  readonly ok: boolean;
  readonly violations: readonly Violation[];
  /** Settings that changed but only take effect after a restart (listeners, TLS, store). */
  readonly restartRequired: readonly string[];
}

const OWN_PATHS = new Set(['/health', '/ready', '/metrics']);
const NO_NAMES: readonly string[] = Object.freeze([]);

/**
 * The sluice gateway: a rate-limiting reverse proxy. Each request is checked against its exemptions, its
 * identity (JWT, API key or trusted identity headers, failed credentials counting against the client IP's
 * public-auth bucket) and its policies (the tier's minute and hour buckets plus every matching endpoint rule,
 * all or nothing), then proxied to the upstream with undici, bodies streamed both ways.
 *
 * Events: `reload` ({@link ReloadResult}) after each reload attempt, `closed` after shutdown.
 *
 * @example
 * ```ts
 * const gateway = await Gateway.start({ config: loadConfigOrThrow('rate-limits.yaml') });
 * console.log(gateway.url);
 * process.on('SIGTERM', () => gateway.close());
 * ```
 */
export class Gateway extends EventEmitter {
  /** The base URL clients use, for example `http://127.0.0.1:8080`. */
  url = '';
  /** The admin listener's base URL, or `undefined` when no admin section is configured. */
  adminUrl: string | undefined;
  /** The Prometheus sink every decision is recorded in (it also feeds the dashboard's sinks below). */
  readonly metrics: PrometheusMetrics;
  /** Per-second counts of the last minutes of decisions, for the dashboard. */
  readonly rates: RateWindow;
  /** The keys denied most often, as keyed hashes, for the dashboard. */
  readonly topLimitedKeys: TopLimitedKeys;
  /**
   * Tenant quota tracking (the `quota:` section): usage by tenant, endpoint category and time bucket, alerts at
   * thresholds; `undefined` when not configured.
   */
  readonly quota: TenantQuota | undefined;
  readonly logger: Logger;
  readonly store: RateLimitStore;
  #runtime: Runtime;
  readonly #opened: OpenedStore;
  readonly #server: Server;
  readonly #admin: AdminServer | undefined;
  readonly #options: GatewayOptions;
  readonly #now: () => number;
  readonly #upgraded = new Set<Duplex>();
  #watcher: FSWatcher | undefined;
  #watchTimer: ReturnType<typeof setTimeout> | undefined;
  #inflight = 0;
  #drainWaiters: (() => void)[] = [];
  #draining = false;
  #closing: Promise<void> | undefined;

  private constructor(options: GatewayOptions) {
    super();
    const config = options.config;
    this.#options = options;
    this.#now = options.now ?? Date.now;
    this.logger = options.logger ?? createLogger(config.logging.level);
    this.#opened = createStore(config, options.clock);
    this.store = this.#opened.store;
    this.#runtime = new Runtime(config, this.store);
    const clock = options.clock === undefined ? {} : { clock: options.clock };
    this.rates = new RateWindow(clock);
    // The last five to ten minutes (the current and the previous period), like the dashboard's chart.
    this.topLimitedKeys = new TopLimitedKeys({ periodMs: 300_000, ...clock });
    this.metrics = new TappedMetrics([this.rates, this.topLimitedKeys], {
      prefix: config.metrics.prefix,
      exemptReasons: [...EXEMPT_REASONS],
    });
    const stats = (this.store as { stats?: unknown }).stats;
    if (typeof stats === 'function') this.metrics.observeStore(this.store as never);
    this.quota = TenantQuota.open({
      config,
      current: () => this.#runtime.config,
      redis: this.#opened.redis,
      metrics: this.metrics,
      logger: this.logger,
      // Quota buckets are wall-clock time, shared by a fleet through Redis.
      clock: { now: () => this.#now(), sleep: (ms, signal) => wallClock.sleep(ms, signal) },
    });
    const handler = (req: IncomingMessage, res: ServerResponse) => void this.#handle(req, res);
    const tls = config.server.tls;
    this.#server =
      tls === undefined
        ? createHttpServer(handler)
        : createHttpsServer(
            {
              cert: readFileSync(tls.cert),
              key: readFileSync(tls.key),
              ca: tls.clientCa === undefined ? undefined : readFileSync(tls.clientCa),
              // Clients without a certificate are still served (and limited); only a verified one can be exempt.
              requestCert: tls.clientCa !== undefined,
              rejectUnauthorized: false,
            },
            handler,
          );
    this.#server.on(
      'upgrade',
      (req: IncomingMessage, socket: Duplex, head: Buffer) => void this.#upgrade(req, socket, head),
    );
    this.#server.on('clientError', (_e, socket: Duplex) => {
      if (socket.writable) socket.end('HTTP/1.1 400 Bad Request\r\nconnection: close\r\n\r\n');
      else socket.destroy();
    });
    this.#admin =
      config.admin === undefined
        ? undefined
        : new AdminServer(
            this,
            config.admin.token,
            new Dashboard(this, {
              rates: this.rates,
              topLimitedKeys: this.topLimitedKeys,
              ...(this.quota === undefined ? {} : { quota: this.quota.tracker }),
            }),
          );
  }

  /**
   * Starts the gateway: opens the store, listens on `server.host:server.port` (and the admin listener), and
   * watches the configuration file when asked.
   *
   * @throws SluiceError `ERR_INVALID_CONFIG` when a JWKS or API key file is unusable; listen errors as Node
   * reports them (for example `EADDRINUSE`).
   */
  static async start(options: GatewayOptions): Promise<Gateway> {
    const g = new Gateway(options);
    const c = options.config;
    try {
      await listen(g.#server, c.server.host, c.server.port);
      g.url = `${c.server.tls === undefined ? 'http' : 'https'}://${hostForUrl(c.server.host)}:${(g.#server.address() as AddressInfo).port}`;
      if (g.#admin !== undefined && c.admin !== undefined) {
        const port = await g.#admin.listen(c.admin.host, c.admin.port);
        g.adminUrl = `http://${hostForUrl(c.admin.host)}:${port}`;
      }
    } catch (e) {
      await g.close();
      throw e;
    }
    const file = options.configFile ?? c.file;
    if (file !== undefined && (options.watch ?? c.reload.watch)) g.#watch(file);
    g.logger.info(
      { url: g.url, admin: g.adminUrl, upstream: c.upstream.url, store: g.store.kind },
      'sluice gateway listening',
    );
    return g;
  }

  /** The configuration in effect. */
  get config(): GatewayConfig {
    return this.#runtime.config;
  }

  /**
   * The compiled configuration in effect (policies, identity, exemptions); replaced as a whole on reload. The
   * decision API and the Envoy service read it per request, so they decide exactly as the proxy does.
   */
  get runtime(): Runtime {
    return this.#runtime;
  }

  /** Requests being served now. */
  get inflight(): number {
    return this.#inflight;
  }

  /**
   * Reads the configuration file again. A valid file replaces the configuration; policies whose limits did not
   * change keep their buckets. An invalid file changes nothing and every violation is logged.
   */
  async reload(): Promise<ReloadResult> {
    const file = this.#options.configFile ?? this.#runtime.config.file;
    let result: ReloadResult;
    if (file === undefined) {
      result = {
        ok: false,
        violations: [{ path: '', line: 0, column: 0, message: 'no configuration file to reload' }],
        restartRequired: [],
      };
    } else {
      result = this.#reloadFrom(file);
    }
    this.emit('reload', result);
    return result;
  }

  #reloadFrom(file: string): ReloadResult {
    let loaded: ReturnType<typeof loadConfigFile>;
    try {
      loaded = loadConfigFile(file, { env: this.#options.env, overrides: this.#options.overrides });
    } catch (e) {
      const v = { path: '', line: 0, column: 0, message: (e as Error).message };
      this.logger.error(
        { file, violation: v },
        'configuration reload failed; keeping the current configuration',
      );
      return { ok: false, violations: [v], restartRequired: [] };
    }
    if (!loaded.ok) {
      for (const v of loaded.violations) {
        this.logger.error(
          { file, path: v.path, line: v.line, column: v.column },
          `invalid configuration: ${v.message}`,
        );
      }
      this.logger.error(
        { file, violations: loaded.violations.length },
        'configuration reload rejected; keeping the current configuration',
      );
      return { ok: false, violations: loaded.violations, restartRequired: [] };
    }
    const old = this.#runtime;
    let next: Runtime;
    try {
      next = new Runtime(loaded.config, this.store, old);
    } catch (e) {
      const v = { path: '', line: 0, column: 0, message: (e as Error).message };
      this.logger.error(
        { file, violation: v },
        'configuration reload rejected; keeping the current configuration',
      );
      return { ok: false, violations: [v], restartRequired: [] };
    }
    const restartRequired = restartOnly(old.config, loaded.config);
    this.#runtime = next;
    if (old.proxy !== undefined && old.proxy !== next.proxy) void old.proxy.close();
    if (restartRequired.length > 0) {
      this.logger.warn({ settings: restartRequired }, 'changed settings take effect after a restart');
    }
    this.logger.info({ file, policies: next.plan.limiter.policies.length }, 'configuration reloaded');
    return { ok: true, violations: [], restartRequired };
  }

  /**
   * The buckets of a key under every policy, without taking anything.
   *
   * @param key - an identity key such as `ip:203.0.113.9` or `acme:ci-bot` (without the key prefix).
   */
  async inspect(key: string): Promise<BucketView[]> {
    const plan = this.#runtime.plan;
    const out: BucketView[] = [];
    for (const check of plan.allChecks(key)) {
      const d: Decision = await plan.limiter.peek([check], 1);
      const o = d.outcomes[0];
      out.push({
        policy: check.policy.name,
        quota: check.policy.quota,
        window: check.policy.window,
        burst: check.policy.burst,
        remaining: o.remaining,
        resetSeconds: o.resetSeconds,
      });
    }
    return out;
  }

  /** Forgets every bucket of a key, so it starts full under each policy. */
  async resetKey(key: string): Promise<void> {
    const plan = this.#runtime.plan;
    await plan.limiter.store.reset(plan.allChecks(key));
    this.logger.info({ key }, 'key reset');
  }

  /**
   * Stops the gateway: stops accepting connections, reports not ready, lets requests in flight finish (up to
   * `server.shutdownTimeout`), then closes every connection, the upstream pool and the store.
   */
  close(): Promise<void> {
    this.#closing ??= this.#shutdown();
    return this.#closing;
  }

  async #shutdown(): Promise<void> {
    this.#draining = true;
    this.#watcher?.close();
    if (this.#watchTimer !== undefined) clearTimeout(this.#watchTimer);
    const closed = this.#server.listening
      ? new Promise<void>((r) => this.#server.close(() => r()))
      : Promise.resolve();
    this.#server.closeIdleConnections();
    const adminClosed = this.#admin?.close();
    if (this.#inflight > 0) {
      this.logger.info({ inflight: this.#inflight }, 'draining requests in flight');
      let timer: ReturnType<typeof setTimeout> | undefined;
      await Promise.race([
        new Promise<void>((r) => this.#drainWaiters.push(r)),
        new Promise<void>((r) => {
          timer = setTimeout(r, this.#runtime.config.server.shutdownTimeoutMs);
          timer.unref();
        }),
      ]);
      clearTimeout(timer);
    }
    this.#server.closeAllConnections();
    for (const s of this.#upgraded) s.destroy();
    await closed;
    await adminClosed;
    await this.#runtime.proxy?.destroy();
    // The last counts go to the quota store before its connection closes; queued alert webhooks get a moment.
    await this.quota?.close(Math.min(5000, this.#runtime.config.server.shutdownTimeoutMs));
    await this.#opened.close();
    this.logger.info('sluice gateway stopped');
    this.emit('closed');
  }

  #watch(file: string): void {
    const name = basename(file);
    try {
      // The folder is watched, not the file: editors and config management replace files by renaming.
      this.#watcher = watch(dirname(file), (_event, changed) => {
        if (changed !== null && changed !== name) return;
        if (this.#watchTimer !== undefined) clearTimeout(this.#watchTimer);
        // One save often arrives as several events; reload once they settle.
        this.#watchTimer = setTimeout(() => void this.reload(), 50);
      });
      this.#watcher.on('error', (e) =>
        this.logger.warn({ err: e }, 'configuration watch failed; SIGHUP still reloads'),
      );
    } catch (e) {
      this.logger.warn({ err: e }, 'cannot watch the configuration file; SIGHUP still reloads');
    }
  }

  #begin(): void {
    this.#inflight++;
  }

  #end(): void {
    this.#inflight--;
    if (this.#inflight === 0 && this.#drainWaiters.length > 0) {
      for (const w of this.#drainWaiters.splice(0)) w();
    }
  }

  async #handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const started = performance.now();
    const rt = this.#runtime;
    const c = rt.config;
    const id = requestIdOf(req.headers[c.server.requestIdHeader]);
    this.#begin();
    let outcome = 'proxied';
    let key: string | undefined;
    let tier: string | undefined;
    res.once('close', () => {
      this.#end();
      if (!this.logger.isLevelEnabled('info')) return;
      this.logger.info(
        {
          reqId: id,
          method: req.method,
          url: req.url,
          status: res.statusCode,
          ms: Math.round((performance.now() - started) * 100) / 100,
          outcome,
          key,
          tier,
        },
        'request',
      );
    });
    // The request id header is set here only on the gateway's own answers: a proxied response carries it in
    // `extra`, and a response with nothing set before `writeHead` lets Node serialize the flat header list as is.
    if (this.#draining) res.setHeader('connection', 'close');
    const target = req.url ?? '/';
    if (target.charCodeAt(0) !== 47) {
      outcome = 'bad_request';
      res.setHeader(c.server.requestIdHeader, id);
      sendProblem(res, Problems.badRequest('The request target must be a path.'), target, id);
      return;
    }
    const q = target.indexOf('?');
    const path = normalizePath(q < 0 ? target : target.slice(0, q));
    const query = q < 0 ? '' : target.slice(q);
    const method = req.method ?? 'GET';
    if ((method === 'GET' || method === 'HEAD') && OWN_PATHS.has(path)) {
      outcome = 'own';
      res.setHeader(c.server.requestIdHeader, id);
      this.metrics.recordExempt({ reason: 'endpoint' });
      await this.#own(path, req, res);
      return;
    }
    try {
      const admitting = this.#admit(rt, req, method, path, id);
      // The memory store answers in the same tick: no await, so no microtask hop for most requests.
      const admission = isPromiseLike(admitting) ? await admitting : admitting;
      if (admission.kind === 'deny') {
        outcome = admission.outcome;
        key = admission.key;
        tier = admission.tier;
        if (res.headersSent) return;
        res.setHeader(c.server.requestIdHeader, id);
        for (const [k, v] of admission.headers) res.setHeader(k, v);
        res.writeHead(admission.status, {
          'content-type': 'application/problem+json',
          'content-length': Buffer.byteLength(admission.body),
          'cache-control': 'no-store',
        });
        res.end(admission.body);
        // The client may be sending a body we will never read: close rather than drain it.
        if (!req.complete) res.once('finish', () => req.socket.destroySoon?.());
        return;
      }
      if (admission.kind === 'exempt') {
        outcome = `exempt_${admission.reason}`;
        tier = admission.tier;
      } else {
        key = admission.key;
        tier = admission.tier;
      }
      const extra: OutgoingHttpHeaders = { [c.server.requestIdHeader]: id };
      if (admission.kind === 'allow') for (const [k, v] of admission.headers) extra[k] = v;
      this.#proxy(rt, req, res, path + query, id, extra, (o) => {
        outcome = o;
      });
    } catch (e) {
      outcome = 'error';
      this.logger.error({ reqId: id, err: e }, 'request failed');
      if (!res.headersSent) res.setHeader(c.server.requestIdHeader, id);
      sendProblem(
        res,
        {
          status: 500,
          title: 'Internal Server Error',
          detail: 'The gateway failed to handle the request.',
          code: 'internal_error',
        },
        path,
        id,
      );
    }
  }

  #proxy(
    rt: Runtime,
    req: IncomingMessage,
    res: ServerResponse,
    pathAndQuery: string,
    id: string,
    extra: OutgoingHttpHeaders,
    setOutcome: (o: string) => void,
  ): void {
    const c = rt.config;
    const instance = pathAndQuery;
    if (rt.proxy === undefined) {
      setOutcome('no_upstream');
      sendProblem(res, Problems.noUpstream(), instance, id, extra as Record<string, string>);
      return;
    }
    const length = Number(req.headers['content-length'] ?? 0);
    if (length > c.server.maxBodyBytes) {
      setOutcome('too_large');
      res.setHeader('connection', 'close');
      sendProblem(
        res,
        Problems.tooLarge(c.server.maxBodyBytes),
        instance,
        id,
        extra as Record<string, string>,
      );
      res.once('finish', () => req.socket.destroySoon?.());
      return;
    }
    const headers = upstreamRequestHeaders(req.headers, this.#facts(rt, req, id));
    delete headers.expect;
    rt.proxy.forward(req, res, pathAndQuery, headers, extra, c.server.maxBodyBytes, (failure) => {
      if (failure === undefined) return;
      setOutcome(`upstream_${failure.kind}`);
      if (failure.kind === 'aborted') return;
      try {
        const problem: GatewayProblem =
          failure.kind === 'timeout'
            ? Problems.gatewayTimeout()
            : failure.kind === 'too_large'
              ? Problems.tooLarge(c.server.maxBodyBytes)
              : Problems.badGateway();
        this.logger.warn(
          { reqId: id, err: failure.error.message, kind: failure.kind },
          'upstream request failed',
        );
        if (failure.kind === 'too_large') res.setHeader('connection', 'close');
        sendProblem(res, problem, instance, id, extra as Record<string, string>);
      } catch (e) {
        // Called from undici's handler: an error here must end this response, never reach the pool.
        this.logger.error({ reqId: id, err: e }, 'request failed');
        res.destroy();
      }
    });
  }

  #facts(rt: Runtime, req: IncomingMessage, id: string) {
    const peer = req.socket.remoteAddress ?? 'unknown';
    const trusted = rt.trustedPeer(req.socket.remoteAddress);
    return {
      peer: peer.startsWith('::ffff:') ? peer.slice(7) : peer,
      proto: (req.socket as { encrypted?: boolean }).encrypted === true ? 'https' : 'http',
      host: req.headers.host,
      requestId: id,
      requestIdHeader: rt.config.server.requestIdHeader,
      // Identity headers are believed only from trusted proxies; from anyone else they never reach the upstream.
      strip: trusted ? NO_NAMES : rt.identifier.identityHeaderNames,
      trustedPeer: trusted,
      preserveHost: rt.config.upstream.preserveHost,
    };
  }

  async #upgrade(req: IncomingMessage, socket: Duplex, head: Buffer): Promise<void> {
    const rt = this.#runtime;
    const c = rt.config;
    const id = requestIdOf(req.headers[c.server.requestIdHeader]);
    socket.on('error', () => socket.destroy());
    if (this.#draining) {
      writeRawResponse(socket, 503, [], '');
      return;
    }
    const target = req.url ?? '/';
    const q = target.indexOf('?');
    const path = normalizePath(q < 0 ? target : target.slice(0, q));
    const method = req.method ?? 'GET';
    let admission: Admission;
    try {
      admission = await this.#admit(rt, req, method, path, id);
    } catch (e) {
      this.logger.error({ reqId: id, err: e }, 'upgrade failed');
      writeRawResponse(socket, 500, [], '');
      return;
    }
    if (admission.kind === 'deny') {
      this.logger.info(
        {
          reqId: id,
          method,
          url: target,
          status: admission.status,
          outcome: admission.outcome,
          key: admission.key,
          upgrade: true,
        },
        'request',
      );
      writeRawResponse(
        socket,
        admission.status,
        [...admission.headers, ['content-type', 'application/problem+json'], [c.server.requestIdHeader, id]],
        admission.body,
      );
      return;
    }
    if (rt.proxy === undefined) {
      writeRawResponse(
        socket,
        502,
        [['content-type', 'application/problem+json']],
        problemBody(Problems.noUpstream(), path, id),
      );
      return;
    }
    const extra: OutgoingHttpHeaders = { [c.server.requestIdHeader]: id };
    if (admission.kind === 'allow') for (const [k, v] of admission.headers) extra[k] = v;
    const headers = upstreamRequestHeaders(req.headers, this.#facts(rt, req, id));
    const failure = await rt.proxy.upgrade(
      req,
      socket,
      head,
      path + (q < 0 ? '' : target.slice(q)),
      headers,
      extra,
    );
    if (failure !== undefined) {
      if (failure.kind !== 'aborted') {
        const p = failure.kind === 'timeout' ? Problems.gatewayTimeout() : Problems.badGateway();
        writeRawResponse(
          socket,
          p.status,
          [['content-type', 'application/problem+json']],
          problemBody(p, path, id),
        );
      }
      this.logger.warn(
        { reqId: id, kind: failure.kind, err: failure.error.message },
        'upgrade not passed through',
      );
      return;
    }
    this.#upgraded.add(socket);
    socket.once('close', () => this.#upgraded.delete(socket));
    this.logger.info(
      {
        reqId: id,
        method,
        url: target,
        status: 101,
        outcome: admission.kind === 'exempt' ? `exempt_${admission.reason}` : 'proxied',
        upgrade: true,
      },
      'request',
    );
  }

  /** Admits a request of the gateway's own listener through the one admission function (mTLS included). */
  #admit(
    rt: Runtime,
    req: IncomingMessage,
    method: string,
    path: string,
    id: string,
  ): Admission | Promise<Admission> {
    const peer = req.socket.remoteAddress;
    return admitRequest(this, {
      method,
      path,
      headers: req.headers,
      clientIp: rt.clientIp(peer, req.headers),
      trustIdentityHeaders: rt.trustedPeer(peer),
      cost: 1,
      correlationId: id,
      nowMs: this.#now(),
      socket: req.socket,
    });
  }

  async #own(path: string, req: IncomingMessage, res: ServerResponse): Promise<void> {
    const send = (status: number, body: unknown) => {
      const text = JSON.stringify(body);
      res.writeHead(status, {
        'content-type': 'application/json',
        'cache-control': 'no-store',
        'content-length': Buffer.byteLength(text),
      });
      res.end(req.method === 'HEAD' ? undefined : text);
    };
    if (path === '/health') {
      send(200, { status: 'ok' });
      return;
    }
    if (path === '/ready') {
      if (this.#draining) {
        send(503, { status: 'draining' });
        return;
      }
      const ok = await this.#storeAnswers();
      send(ok ? 200 : 503, { status: ok ? 'ready' : 'store_unavailable', store: this.store.kind });
      return;
    }
    if (!this.#runtime.config.metrics.enabled) {
      send(404, { status: 'metrics disabled' });
      return;
    }
    metricsHandler(this.metrics.registry)(req, res);
  }

  /** True when the store answers a read within its timeout (a peek of a key no one uses). */
  async #storeAnswers(): Promise<boolean> {
    const plan = this.#runtime.plan;
    try {
      const d = await withTimeout(
        Promise.resolve(plan.limiter.peek([{ policy: plan.publicAuth, key: '\u0000ready' }], 1)),
        1000,
      );
      return d !== undefined && d.reason !== 'store_unavailable' && d.reason !== 'store_unavailable_open';
    } catch {
      return false;
    }
  }
}

function restartOnly(a: GatewayConfig, b: GatewayConfig): string[] {
  const out: string[] = [];
  const same = (x: unknown, y: unknown) => JSON.stringify(x) === JSON.stringify(y);
  if (a.server.host !== b.server.host || a.server.port !== b.server.port) out.push('server.host/port');
  if (!same(a.server.tls, b.server.tls)) out.push('server.tls');
  if (!same(a.admin, b.admin)) out.push('admin');
  if (
    !same(a.store, b.store) ||
    a.maxTrackedKeys !== b.maxTrackedKeys ||
    a.sweepIntervalMs !== b.sweepIntervalMs
  )
    out.push('store');
  if (a.metrics.prefix !== b.metrics.prefix) out.push('metrics.prefix');
  // Categories and limits apply on reload; where usage lives and how alerts go out are fixed at start.
  const tracking = (q: GatewayConfig['quota']) =>
    q === undefined
      ? undefined
      : [
          q.storage,
          q.keyPrefix,
          q.windowSeconds,
          q.bucketSeconds,
          q.flushIntervalMs,
          q.thresholds,
          q.webhook,
        ];
  if (!same(tracking(a.quota), tracking(b.quota))) out.push('quota.tracking/thresholds/webhook');
  if (a.decision?.host !== b.decision?.host || a.decision?.port !== b.decision?.port)
    out.push('decision.host/port');
  if (a.envoy?.host !== b.envoy?.host || a.envoy?.port !== b.envoy?.port) out.push('envoy.host/port');
  if (a.logging.level !== b.logging.level) out.push('logging.level');
  return out;
}

function listen(server: Server, host: string, port: number): Promise<void> {
  return new Promise((resolve, reject) => {
    const onError = (e: Error) => reject(e);
    server.once('error', onError);
    server.listen(port, host, () => {
      server.off('error', onError);
      resolve();
    });
  });
}

function hostForUrl(host: string): string {
  return host.includes(':') ? `[${host}]` : host;
}

function withTimeout<T>(p: Promise<T>, ms: number): Promise<T | undefined> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  return Promise.race([
    p,
    new Promise<undefined>((r) => {
      timer = setTimeout(() => r(undefined), ms);
      timer.unref();
    }),
  ]).finally(() => clearTimeout(timer));
}
