import { readFileSync } from 'node:fs';
import {
  createServer as createHttpServer,
  type IncomingMessage,
  type Server,
  type ServerResponse,
} from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import type { AddressInfo, Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import type { GatewayConfig } from '../config/gateway-config.js';
import { RequestLog } from '../log/request-log.js';
import { ConnectionLine, type IdleCount } from './connection-line.js';
import type { ListenerGate } from './listener-gate.js';
import type { ProxyContext, ProxyHost } from './proxy-context.js';
import { ConnectionRefuser } from './refuse-connection.js';
import { handleRequest } from './request-pipeline.js';
import { handleUpgrade } from './upgrade-path.js';

/**
 * The longest the proxy listener waits for a request's head (Node.js's default, set here because it would follow
 * `requestTimeout` to 0): a client trickling its headers holds a socket this long at most, and no upstream
 * connection at all (nothing is forwarded before the head is whole).
 */
const HEADERS_TIMEOUT_MS = 60_000;

/**
 * How often Node.js checks the head timeout. Its default, 30 s, lets a slow head hold its socket up to 90 s; at
 * 5 s the timeout fires within 65 s, for the cost of walking the connection list every 5 s.
 */
const CONNECTIONS_CHECKING_INTERVAL_MS = 5_000;

/**
 * How long an idle keep-alive connection stays open between requests: Node.js's default, set here so that it
 * does not change under the gateway. A load balancer in front should close its idle connections sooner.
 */
const KEEP_ALIVE_TIMEOUT_MS = 5_000;

/** The shortest time between two reclaims of idle keep-alive connections at the cap. */
const RECLAIM_INTERVAL_MS = 1_000;

/** The shortest time between two warnings of failed accepts: one line per flood, not per connection. */
const ACCEPT_WARNING_INTERVAL_MS = 60_000;

/** Options of a {@link ProxyServer} beyond the configuration. */
export interface ProxyServerOptions {
  /** Admits connections under `server.maxConnections` and `server.maxConnectionsPerClient`; none: no caps. */
  readonly gate?: ListenerGate;
  /** The head timeout; the default is 60 s (tests shorten it). */
  readonly headersTimeoutMs?: number;
  /** How often the head timeout is checked; the default is 5 s (tests shorten it). */
  readonly connectionsCheckingIntervalMs?: number;
}

/**
 * The proxy listener (`server.host:server.port`, HTTP or HTTPS with optional client certificates): it runs the
 * request pipeline and the upgrade path, counts requests in flight and drains them on close.
 */
export class ProxyServer implements ProxyContext {
  readonly host: ProxyHost;
  readonly now: () => number;
  readonly requestLog: RequestLog;
  readonly #server: Server;
  readonly #tls: boolean;
  readonly #upgraded = new Set<Duplex>();
  /** Connections refused at a cap: whatever they send is not served. */
  readonly #refused = new WeakSet<Duplex>();
  readonly #refuser = new ConnectionRefuser();
  /** Connections accepted once the drain began: they are for the probes, and get nothing else served. */
  readonly #late = new WeakSet<Duplex>();
  /**
   * With TLS, every accepted TCP socket until it closes: Node.js's HTTP server knows a connection only once its
   * handshake is done, so the end of a drain closes these too (a handshake never finished would hold the stop).
   */
  readonly #sockets = new Set<Socket>();
  /**
   * The line of every connection that has served a request (made at its first, dropped when it closes): its
   * requests one at a time, and whether it is idle between two of them, the first to go when the listener is at
   * its cap. One map lookup per request; the set is walked only by a reclaim.
   */
  readonly #lines = new WeakMap<Socket, ConnectionLine>();
  readonly #open = new Set<ConnectionLine>();
  readonly #idle: IdleCount = { n: 0 };
  #reclaimedAt = Number.NEGATIVE_INFINITY;
  #acceptWarnedAt = Number.NEGATIVE_INFINITY;
  #acceptFailures = 0;
  #inflight = 0;
  #drainWaiters: (() => void)[] = [];
  #draining = false;

  /**
   * @param host - the gateway (admission reads the configuration in effect from it per request).
   * @param server - the `server:` section at start: TLS files are read here, once.
   * @param now - wall-clock milliseconds.
   * @param options - the connection gate, and shorter timeouts for tests.
   * @throws the file system error when a TLS file cannot be read.
   */
  constructor(
    host: ProxyHost,
    server: GatewayConfig['server'],
    now: () => number,
    options: ProxyServerOptions = {},
  ) {
    this.host = host;
    this.now = now;
    this.requestLog = new RequestLog(host.logger);
    // The line is left in `end`, from the pipeline's one close listener of the response: no listener, closure or
    // `once` wrapper of its own per request. It was made at the connection's first request and outlives its
    // responses.
    const handler = (req: IncomingMessage, res: ServerResponse) => {
      const socket = req.socket as Socket;
      let line = this.#lines.get(socket);
      if (line === undefined) {
        // Only a connection that was not refused gets a line: a known one needs no second look.
        if (this.#refused.has(socket)) return;
        line = this.#lineOf(socket);
      }
      if (line.tryEnter()) void handleRequest(this, req, res);
      else line.wait(() => void handleRequest(this, req, res));
    };
    const tls = server.tls;
    this.#tls = tls !== undefined;
    // No whole-request timeout (Node.js's default, 300 s, would cut a large upload that keeps the pace): request
    // bodies the gateway forwards keep `server.bodyTimeout` and `server.bodyMinRate` instead (D-G47).
    const timeouts = {
      requestTimeout: 0,
      headersTimeout: options.headersTimeoutMs ?? HEADERS_TIMEOUT_MS,
      connectionsCheckingInterval: options.connectionsCheckingIntervalMs ?? CONNECTIONS_CHECKING_INTERVAL_MS,
      keepAliveTimeout: KEEP_ALIVE_TIMEOUT_MS,
    };
    this.#server =
      tls === undefined
        ? createHttpServer({ shouldUpgradeCallback: passesUpgrade, ...timeouts }, handler)
        : createHttpsServer(
            {
              shouldUpgradeCallback: passesUpgrade,
              ...timeouts,
              cert: readFileSync(tls.cert),
              key: readFileSync(tls.key),
              ca: tls.clientCa === undefined ? undefined : readFileSync(tls.clientCa),
              // Clients without a certificate are still served (and limited); only a verified one can be exempt.
              requestCert: tls.clientCa !== undefined,
              rejectUnauthorized: false,
            },
            handler,
          );
    // With a listener Node no longer answers `Expect: 100-continue` by itself: a denied request gets its 429
    // without a `100 Continue` first, and its body is never asked for.
    this.#server.on('checkContinue', handler);
    this.#server.on('upgrade', (req: IncomingMessage, socket: Duplex, head: Buffer) => {
      if (this.#refused.has(socket)) socket.destroy();
      else void handleUpgrade(this, req, socket, head);
    });
    this.#server.on('clientError', (e: NodeJS.ErrnoException, socket: Duplex) => {
      if (socket.writable) socket.end(`HTTP/1.1 ${clientErrorStatus(e.code)}\r\nconnection: close\r\n\r\n`);
      else socket.destroy();
    });
    // The socket requests arrive on: with TLS the secure one, which `connection` does not give.
    this.#server.on(tls === undefined ? 'connection' : 'secureConnection', (socket: Socket) => {
      if (this.#draining) this.#late.add(socket);
    });
    if (tls !== undefined) {
      this.#server.on('connection', (socket: Socket) => {
        this.#sockets.add(socket);
        socket.once('close', () => this.#sockets.delete(socket));
      });
    }
    const gate = options.gate;
    // Before Node.js's own listener: a refused connection is answered before anything else is done with it.
    if (gate !== undefined) {
      this.#server.prependListener('connection', (socket: Socket) => {
        const refused = gate.admit(socket);
        if (refused === undefined) return;
        this.#refused.add(socket);
        this.#refuser.refuse(socket, !this.#tls);
        if (refused === 'total') this.#reclaimIdle();
      });
    }
  }

  /** The line of a connection at its first request, forgotten when the connection closes. */
  #lineOf(socket: Socket): ConnectionLine {
    const line = new ConnectionLine(socket, this.#idle);
    this.#lines.set(socket, line);
    this.#open.add(line);
    socket.once('close', () => {
      line.idle = false;
      this.#open.delete(line);
    });
    return line;
  }

  /** Closes the keep-alive connections idle between requests, at most once a second, to make room at the cap. */
  #reclaimIdle(): void {
    const t = performance.now();
    if (t - this.#reclaimedAt < RECLAIM_INTERVAL_MS || this.#idle.n === 0) return;
    this.#reclaimedAt = t;
    // A destroyed socket's close (and the line's removal from the set) comes in a later tick.
    for (const line of this.#open) {
      if (!line.idle) continue;
      line.idle = false;
      line.socket.destroy();
    }
  }

  #acceptFailed(e: NodeJS.ErrnoException): void {
    this.#acceptFailures++;
    const t = performance.now();
    if (t - this.#acceptWarnedAt < ACCEPT_WARNING_INTERVAL_MS) return;
    this.#acceptWarnedAt = t;
    this.host.logger.warn(
      { code: e.code, failures: this.#acceptFailures },
      'proxy listener: accept failed (no file descriptor left?); lower server.maxConnections or raise the open file limit',
    );
    this.#acceptFailures = 0;
  }

  get draining(): boolean {
    return this.#draining;
  }

  acceptedWhileDraining(socket: Duplex): boolean {
    return this.#late.has(socket);
  }

  /** Requests being served now. */
  get inflight(): number {
    return this.#inflight;
  }

  begin(): void {
    this.#inflight++;
  }

  end(req: IncomingMessage): void {
    this.#lines.get(req.socket as Socket)?.leave();
    this.#inflight--;
    if (this.#inflight === 0 && this.#drainWaiters.length > 0) {
      for (const w of this.#drainWaiters.splice(0)) w();
    }
  }

  keepUpgraded(socket: Duplex): void {
    this.#upgraded.add(socket);
    socket.once('close', () => this.#upgraded.delete(socket));
  }

  /**
   * Listens and returns the base URL clients use.
   *
   * @param reusePort - share the port with the other threads' listeners (`sluice serve --threads`, on Linux).
   * @throws the listen error as Node reports it (for example `EADDRINUSE`).
   */
  listen(host: string, port: number, reusePort = false): Promise<string> {
    return new Promise((resolve, reject) => {
      this.#server.once('error', reject);
      this.#server.listen({ port, host, ...(reusePort ? { reusePort } : {}) }, () => {
        this.#server.off('error', reject);
        // Without a listener, a failed accept (EMFILE or ENFILE: no descriptor left) would end the process, and
        // with it every listener. libuv has already closed the connections it could not take; the listener goes on.
        this.#server.on('error', (e: NodeJS.ErrnoException) => this.#acceptFailed(e));
        const bound = (this.#server.address() as AddressInfo).port;
        resolve(`${this.#tls ? 'https' : 'http'}://${host.includes(':') ? `[${host}]` : host}:${bound}`);
      });
    });
  }

  /**
   * Drains, then stops: reports draining, lets requests in flight finish (up to `server.shutdownTimeout` of the
   * configuration in effect), then stops listening and closes every connection, upgraded ones included. While
   * the requests finish the listener still accepts, for the probes: `/health` answers 200 and `/ready` 503
   * `draining` until the process exits, and any other request on a connection accepted meanwhile gets the 503
   * problem `shutting_down` (the pipeline reads {@link ProxyServer.acceptedWhileDraining}).
   */
  async close(): Promise<void> {
    this.#draining = true;
    this.#server.closeIdleConnections();
    if (this.#inflight > 0) {
      this.host.logger.info({ inflight: this.#inflight }, 'draining requests in flight');
      let timer: ReturnType<typeof setTimeout> | undefined;
      await Promise.race([
        new Promise<void>((r) => this.#drainWaiters.push(r)),
        new Promise<void>((r) => {
          timer = setTimeout(r, this.host.runtime.config.server.shutdownTimeoutMs);
          timer.unref();
        }),
      ]);
      clearTimeout(timer);
    }
    const closed = this.#server.listening
      ? new Promise<void>((r) => this.#server.close(() => r()))
      : Promise.resolve();
    this.#server.closeAllConnections();
    for (const s of this.#upgraded) s.destroy();
    for (const s of this.#sockets) s.destroy();
    await closed;
  }
}

/**
 * The status line a client error is answered with. A head that did not arrive within the head timeout is 408 (Node
 * reports it as `ERR_HTTP_REQUEST_TIMEOUT` on every supported release); headers past Node.js's limit (16 KiB by
 * default) are 431, as Node.js itself answers them (RFC 6585); anything else the parser refused is 400.
 */
function clientErrorStatus(code: string | undefined): string {
  if (code === 'ERR_HTTP_REQUEST_TIMEOUT') return '408 Request Timeout';
  if (code === 'HPE_HEADER_OVERFLOW') return '431 Request Header Fields Too Large';
  return '400 Bad Request';
}

/**
 * Whether a request offering an upgrade becomes one (the `upgrade` path) or is served as the plain request it also
 * is. An offer of HTTP/2 over cleartext alone (`Upgrade: h2c`, what `curl --http2` sends to an `http://` URL) is
 * served as HTTP/1.1: the gateway speaks no HTTP/2, a server may ignore an upgrade (RFC 9110 7.8), and the
 * offer's fields stay on this hop like every field the Connection header names. A Node.js release without this
 * server option treats every offer as an upgrade, as before.
 */
function passesUpgrade(req: IncomingMessage): boolean {
  const offered = req.headers.upgrade;
  if (offered === undefined) return false;
  return offered.split(',').some((p) => {
    const name = p.trim().toLowerCase();
    return name !== '' && name !== 'h2c';
  });
}
