import type { Readable } from 'node:stream';
import { closesAfterDenial, DENIAL_DRAIN_LIMIT } from './denial-connection.js';
import { readHeader } from './header-source.js';
import type { HeaderSource } from './types.js';

/**
 * How long a denial waits for the rest of a chunked body before it answers anyway and closes the connection: a
 * client that stops sending (or trickles) holds no denied request open. The gateway waits as long.
 */
export const DENIAL_DRAIN_MS = 1000;

/** The part of a Node.js request (`IncomingMessage`) a denial reads: its headers and its body stream. */
export type DrainableRequest = Pick<Readable, 'on' | 'off' | 'pause'> & {
  readonly headers: HeaderSource;
  readonly complete: boolean;
};

/** Requests whose `100 Continue` {@link deferContinue} holds back until their body is read. */
const pendingContinue = new WeakSet<object>();

/** The part of a node:http server {@link deferContinue} hooks. */
export interface ContinueServer {
  on(event: 'checkContinue', listener: (req: DeferredRequest, res: DeferredResponse) => void): unknown;
  emit(event: 'request', req: DeferredRequest, res: DeferredResponse): boolean;
}

/** The request {@link deferContinue} watches. */
export interface DeferredRequest {
  on(event: 'newListener', listener: (name: string | symbol) => void): unknown;
  on(event: 'resume', listener: () => void): unknown;
  off(event: 'newListener', listener: (name: string | symbol) => void): unknown;
}

/** The response {@link deferContinue} sends the interim answer on. */
export interface DeferredResponse {
  readonly headersSent: boolean;
  writeContinue(): void;
}

/**
 * Holds back Node's automatic `100 Continue` until something reads the request body. Without it, node:http
 * sends `100 Continue` before any handler runs, so a client that asked first uploads its body only to be denied;
 * with it, a request the limiter denies gets its 429 without a `100 Continue`, the client never sends the body,
 * and Node closes the connection after the answer (with `Connection: close`). An admitted request gets its
 * `100 Continue` as soon as the application starts reading the body (a `data` or `readable` listener, a pipe,
 * `resume()`); one whose body is never read gets its final answer without it, and the connection closes too.
 * Works for every adapter on node:http (the server of `http.createServer`, Express's `app.listen()`, Fastify's
 * `fastify.server`, `@hono/node-server`'s `serve()`).
 *
 * @param server - a node:http or node:https server; call once, before it listens.
 *
 * @example
 * ```ts
 * const server = createServer(withRateLimit(http, handler));
 * deferContinue(server);
 * server.listen(3000, '127.0.0.1');
 * ```
 */
export function deferContinue(server: ContinueServer): void {
  server.on('checkContinue', (req, res) => {
    pendingContinue.add(req);
    const send = () => {
      if (!pendingContinue.delete(req)) return;
      req.off('newListener', onListener);
      // After the final answer (Node drains an unread body then) an interim one would be a protocol error.
      if (!res.headersSent) res.writeContinue();
    };
    const onListener = (name: string | symbol) => {
      if (name === 'data' || name === 'readable') send();
    };
    req.on('newListener', onListener);
    req.on('resume', send);
    server.emit('request', req, res);
  });
}

/**
 * Whether the answer to a denied request must close the connection, after reading and dropping what is cheap to
 * read: no when the body is complete or absent; yes when its `100 Continue` is still held back (the client never
 * sent it, see {@link deferContinue}); for a chunked body, its rest is read and dropped up to `limit` bytes and
 * {@link DENIAL_DRAIN_MS}, and the connection is kept when it ended within both (so a request pipelined behind it
 * is answered); a declared body is kept up to `limit` (Node reads its rest after the answer). Synchronous unless
 * a chunked body must be read.
 *
 * @param req - the denied request, whose body nobody else reads.
 * @param limit - the most bytes worth reading; default {@link DENIAL_DRAIN_LIMIT}.
 * @param timeoutMs - the most time worth waiting; default {@link DENIAL_DRAIN_MS}.
 */
export function denialCloses(
  req: DrainableRequest,
  limit: number = DENIAL_DRAIN_LIMIT,
  timeoutMs: number = DENIAL_DRAIN_MS,
): boolean | Promise<boolean> {
  if (req.complete) return false;
  if (pendingContinue.has(req)) return readHeader(req.headers, 'content-length') !== '0';
  if (readHeader(req.headers, 'transfer-encoding') !== undefined) {
    return drainBody(req, limit, timeoutMs).then((whole) => !whole);
  }
  return closesAfterDenial(req.headers, limit);
}

/**
 * Reads and drops a request body up to `limit` bytes and `timeoutMs`. Past either, reading stops (the stream is
 * paused, not destroyed, so the answer still goes out).
 *
 * @returns true when the body ended within both.
 */
function drainBody(req: DrainableRequest, limit: number, timeoutMs: number): Promise<boolean> {
  return new Promise((resolve) => {
    let size = 0;
    // One timer per denied chunked body, never per key; it holds the process open for no one.
    const timer = setTimeout(() => done(false), timeoutMs);
    timer.unref?.();
    const done = (whole: boolean) => {
      clearTimeout(timer);
      req.off('data', onData);
      req.off('end', onEnd);
      req.off('error', onFail);
      req.off('close', onFail);
      if (!whole) req.pause();
      resolve(whole);
    };
    const onData = (chunk: Buffer | string) => {
      size += chunk.length;
      if (size > limit) done(false);
    };
    const onEnd = () => done(true);
    const onFail = () => done(false);
    req.on('data', onData);
    req.on('end', onEnd);
    req.on('error', onFail);
    req.on('close', onFail);
  });
}
