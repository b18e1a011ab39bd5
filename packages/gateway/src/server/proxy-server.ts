import { readFileSync } from 'node:fs';
import {
  createServer as createHttpServer,
  type IncomingMessage,
  type Server,
  type ServerResponse,
} from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import type { Duplex } from 'node:stream';
import type { GatewayConfig } from '../config/gateway-config.js';
import type { ProxyContext, ProxyHost } from './proxy-context.js';
import { handleRequest } from './request-pipeline.js';
import { handleUpgrade } from './upgrade-path.js';

/**
 * The longest the proxy listener waits for a request's head (Node.js's default, set here because it would follow
 * `requestTimeout` to 0): a client trickling its headers holds a socket this long at most, and no upstream
 * connection at all (nothing is forwarded before the head is whole).
 */
const HEADERS_TIMEOUT_MS = 60_000;

/**
 * The proxy listener (`server.host:server.port`, HTTP or HTTPS with optional client certificates): it runs the
 * request pipeline and the upgrade path, counts requests in flight and drains them on close.
 */
export class ProxyServer implements ProxyContext {
  readonly host: ProxyHost;
  readonly now: () => number;
  readonly #server: Server;
  readonly #tls: boolean;
  readonly #upgraded = new Set<Duplex>();
  #inflight = 0;
  #drainWaiters: (() => void)[] = [];
  #draining = false;

  /**
   * @param host - the gateway (admission reads the configuration in effect from it per request).
   * @param server - the `server:` section at start: TLS files are read here, once.
   * @param now - wall-clock milliseconds.
   * @throws the file system error when a TLS file cannot be read.
   */
  constructor(host: ProxyHost, server: GatewayConfig['server'], now: () => number) {
    this.host = host;
    this.now = now;
    const handler = (req: IncomingMessage, res: ServerResponse) => void handleRequest(this, req, res);
    const tls = server.tls;
    this.#tls = tls !== undefined;
    // No whole-request timeout (Node.js's default, 300 s, would cut a large upload that keeps the pace): request
    // bodies the gateway forwards keep `server.bodyTimeout` and `server.bodyMinRate` instead (D-G47).
    const timeouts = { requestTimeout: 0, headersTimeout: HEADERS_TIMEOUT_MS };
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
    this.#server.on(
      'upgrade',
      (req: IncomingMessage, socket: Duplex, head: Buffer) => void handleUpgrade(this, req, socket, head),
    );
    this.#server.on('clientError', (e: NodeJS.ErrnoException, socket: Duplex) => {
      // Headers past Node.js's limit (16 KiB by default) are 431, as Node.js itself answers them (RFC 6585).
      const status =
        e.code === 'HPE_HEADER_OVERFLOW' ? '431 Request Header Fields Too Large' : '400 Bad Request';
      if (socket.writable) socket.end(`HTTP/1.1 ${status}\r\nconnection: close\r\n\r\n`);
      else socket.destroy();
    });
  }

  get draining(): boolean {
    return this.#draining;
  }

  /** Requests being served now. */
  get inflight(): number {
    return this.#inflight;
  }

  begin(): void {
    this.#inflight++;
  }

  end(): void {
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
        const bound = (this.#server.address() as AddressInfo).port;
        resolve(`${this.#tls ? 'https' : 'http'}://${host.includes(':') ? `[${host}]` : host}:${bound}`);
      });
    });
  }

  /**
   * Stops accepting, reports draining, lets requests in flight finish (up to `server.shutdownTimeout` of the
   * configuration in effect), then closes every connection, upgraded ones included.
   */
  async close(): Promise<void> {
    this.#draining = true;
    const closed = this.#server.listening
      ? new Promise<void>((r) => this.#server.close(() => r()))
      : Promise.resolve();
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
    this.#server.closeAllConnections();
    for (const s of this.#upgraded) s.destroy();
    await closed;
  }
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
