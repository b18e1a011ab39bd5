import type { IncomingMessage, ServerResponse } from 'node:http';
import { invalidOption } from '../core/index.js';
import { adapterOptions, httpLimiterOption } from '../http/adapter-options.js';
import {
  denialCloses,
  type HeaderPair,
  type HttpLimiter,
  type HttpRequestInfo,
  type Identity,
  isPromiseLike,
  observeNodeResponse,
  type Verdict,
  type WarnFunction,
} from '../http/index.js';
import { emitWarning, type PeerWarnings, peerWarningsOf } from '../http/peer-warnings.js';
import { problemBodyBytes } from '../http/problem.js';

/** Per-request facts an application supplies to the node:http adapter. */
export interface NodeRateLimitOptions {
  /** The verified caller, from your authentication (for principal, tenant, API-key keys). */
  readonly identify?: (req: IncomingMessage) => Identity | undefined;
  /** The operation class of the request, for rules with `operation`. */
  readonly operation?: string | ((req: IncomingMessage) => string | undefined);
  /** Route parameters, for `{ param }` and `webhook` keys. */
  readonly params?: (req: IncomingMessage) => Readonly<Record<string, string | undefined>> | undefined;
  /** Whole tokens this request costs; default the rules' cost. */
  readonly cost?: (req: IncomingMessage) => number | undefined;
  /**
   * Receives the once-only warnings (a request without a peer address, a forwarding header from a peer that is
   * not a trusted proxy) with their stable code. Default: `process.emitWarning`.
   */
  readonly warn?: WarnFunction;
}

const KINDS = {
  identify: 'function',
  operation: 'string-or-function',
  params: 'function',
  cost: 'function',
  warn: 'function',
} as const;
const NO_PEER_HINT =
  'The socket has no remote address, as on a Unix socket (where forwarding headers cannot be trusted either): ' +
  'key such traffic by identity (identify) rather than by IP.';

/** The checked limiter and options of one mount, and the limiter's warning state. */
interface Mount {
  readonly limiter: HttpLimiter;
  readonly options: NodeRateLimitOptions;
  readonly warn: WarnFunction;
  readonly peers: PeerWarnings;
}

function mount(name: string, limiter: unknown, options: unknown): Mount {
  const where = `sluice/node ${name}`;
  const l = httpLimiterOption(`${where}(limiter)`, limiter);
  const o = adapterOptions<NodeRateLimitOptions>(`${where} options`, options, KINDS);
  return { limiter: l, options: o, warn: o.warn ?? emitWarning, peers: peerWarningsOf(l) };
}

function watch(m: Mount, req: IncomingMessage, info: HttpRequestInfo): void {
  // A socket that closed before this point has no address either; that is no configuration matter.
  if (info.remoteAddress === undefined && req.socket.destroyed) return;
  m.peers.check('node', info.remoteAddress, info.headers, m.warn, NO_PEER_HINT);
}

/**
 * The framework-neutral view of a node:http request. Exported so that authentication code can pass the same
 * view to {@link HttpLimiter.recordFailedCredentials}.
 *
 * @param req - the incoming request.
 * @param options - identity, operation, params and cost functions.
 * @param res - the response; given, the view's `signal` aborts when the client disconnects (a queued request
 *   then leaves its queue).
 */
export function nodeRequestInfo(
  req: IncomingMessage,
  options: NodeRateLimitOptions = {},
  res?: ServerResponse,
): HttpRequestInfo {
  const op = options.operation;
  return {
    method: req.method ?? 'GET',
    path: req.url ?? '/',
    headers: req.headers,
    remoteAddress: req.socket.remoteAddress,
    identity: options.identify?.(req),
    operation: typeof op === 'function' ? op(req) : op,
    params: options.params?.(req),
    cost: options.cost?.(req),
    // Read only for a request that waits in a queue: no signal is made per request.
    disconnect: res,
  };
}

/**
 * Sets every header of a verdict on the response; `setHeader` keeps them through a later `writeHead`. With
 * `append`, the draft-11 list fields are added as further field lines (a second, route-level decision on the same
 * request), which HTTP combines into one list.
 */
export function applyHeaders(res: ServerResponse, headers: readonly HeaderPair[], append = false): void {
  for (let i = 0; i < headers.length; i++) {
    // Read by index: destructuring a pair goes through the array iterator until the optimizer removes it.
    const pair = headers[i];
    const name = pair[0];
    const value = pair[1];
    if (append && (name === 'RateLimit' || name === 'RateLimit-Policy') && res.hasHeader(name)) {
      res.appendHeader(name, value);
    } else res.setHeader(name, value);
  }
}

/** Marks a request as decided by a limiter, so a second middleware on it decides only operation rules. */
const DECIDED = Symbol('sluice.decided');

/**
 * The request view for this invocation, or `undefined` when there is nothing left to decide: a request that
 * this limiter already decided is decided again only for operation rules, and only when an operation is known.
 */
function requestFor(
  limiter: HttpLimiter,
  req: IncomingMessage,
  options: NodeRateLimitOptions,
  res: ServerResponse,
): HttpRequestInfo | undefined {
  const marked = req as IncomingMessage & { [DECIDED]?: HttpLimiter };
  const info = nodeRequestInfo(req, options, res);
  if (marked[DECIDED] !== limiter) {
    marked[DECIDED] = limiter;
    return info;
  }
  return info.operation === undefined ? undefined : { ...info, operationRulesOnly: true };
}

/**
 * Whether a denial must close the connection: only when a large request body is still unread, a chunked one runs
 * past the drain bound, or its `100 Continue` was held back (`denialCloses`). The connection is kept otherwise,
 * since Node reads the rest of a small declared body after the answer.
 */
function closeAfter(res: ServerResponse): boolean | Promise<boolean> {
  const req = res.req as IncomingMessage | undefined;
  return req !== undefined && denialCloses(req);
}

/**
 * Answers a denied request with the verdict's status, headers and problem body, and ends the response. The
 * connection stays open for the next request: the rest of a chunked body is read and dropped first (up to
 * `DENIAL_DRAIN_LIMIT` and `DENIAL_DRAIN_MS`, so the answer then goes out a little later), a small declared one
 * after the answer. A larger upload, or one whose `100 Continue` was held back (`deferContinue`), gets
 * `Connection: close` and Node closes the socket once the answer is sent, rather than read the upload.
 */
export function sendDenial(res: ServerResponse, verdict: Verdict): void {
  const close = closeAfter(res);
  // A chunked body is read and dropped first (up to the drain bound), so the answer knows whether to close.
  if (typeof close === 'boolean') writeDenial(res, verdict, close);
  else void close.then((c) => writeDenial(res, verdict, c));
}

/**
 * Flat header lists for `writeHead`, one per length, made on first use: Node reads the list within the call and
 * keeps only the head it serializes, so a denial fills the list of its length instead of allocating its own (and
 * never resizes one, which costs a call into the runtime). A list holds the last denial's header values of its
 * length until the next one (strings only, never a request).
 */
const flatLists: string[][] = [];
/** Lists are kept for up to this many entries; a longer one (many headers) is made per denial. */
const MAX_KEPT = 64;

function flatList(length: number): string[] {
  let list = length <= MAX_KEPT ? flatLists[length] : undefined;
  if (list === undefined) {
    list = [];
    for (let i = 0; i < length; i++) list.push('');
    if (length <= MAX_KEPT) flatLists[length] = list;
  }
  return list;
}
/** The last `Content-Length` value and its string: a flood of denials repeats a few lengths. */
let lastLength = -1;
let lastLengthText = '';

function lengthText(n: number): string {
  if (n !== lastLength) {
    lastLength = n;
    lastLengthText = String(n);
  }
  return lastLengthText;
}

function writeDenial(res: ServerResponse, verdict: Verdict, close: boolean): void {
  if (res.headersSent || res.destroyed) return;
  const body = verdict.body ?? '';
  // Counted from the parts the body was built of when it is the one just built: no flattened copy of it.
  const length = lengthText(problemBodyBytes(body));
  if (res.getHeaderNames().length > 0) {
    // Headers set earlier (by other middleware) must survive: merge through setHeader.
    applyHeaders(res, verdict.headers);
    res.statusCode = verdict.status;
    res.setHeader('Content-Length', length);
    if (close) res.setHeader('Connection', 'close');
    res.end(body);
    return;
  }
  // The common case: one writeHead with a flat list, the cheapest way to send a flood of denials.
  const h = verdict.headers;
  const n = h.length * 2;
  const flat = flatList(n + (close ? 4 : 2));
  for (let i = 0; i < h.length; i++) {
    flat[2 * i] = h[i][0];
    flat[2 * i + 1] = h[i][1];
  }
  flat[n] = 'Content-Length';
  flat[n + 1] = length;
  if (close) {
    flat[n + 2] = 'Connection';
    flat[n + 3] = 'close';
  }
  res.writeHead(verdict.status, flat);
  res.end(body);
}

/** A `(req, res, next)` function in the style of Connect. */
export type NodeMiddleware = (
  req: IncomingMessage,
  res: ServerResponse,
  next: (error?: unknown) => void,
) => void;

/**
 * A `(req, res, next)` rate-limit function for node:http servers and Connect-style stacks: on allow it sets the
 * rate-limit headers and calls `next()`; on deny it writes the 429 (or 503) problem and never calls `next`;
 * a store error that the store's failure mode surfaces goes to `next(error)`.
 *
 * @param limiter - from `createHttpLimiter` (`sluice/http`).
 * @param options - identity, operation, params and cost functions, and `warn`.
 * @throws SluiceError `ERR_INVALID_OPTION` at mount time for a limiter that is not an HttpLimiter (another
 * library's options in its place are named) or an unknown or invalid option.
 *
 * @example
 * ```ts
 * const limit = rateLimitMiddleware(httpLimiter);
 * createServer((req, res) => limit(req, res, (err) => (err ? fail(res, err) : handle(req, res))));
 * ```
 */
export function rateLimitMiddleware(
  limiter: HttpLimiter,
  options: NodeRateLimitOptions = {},
): NodeMiddleware {
  const m = mount('rateLimitMiddleware', limiter, options);
  const apply = (v: Verdict, res: ServerResponse, next: (error?: unknown) => void, again: boolean): void => {
    if (v.action === 'deny') {
      sendDenial(res, v);
      return;
    }
    applyHeaders(res, v.headers, again);
    // Only a verdict that holds something (a concurrency slot, a cost) wraps the response.
    if (v.observer !== undefined) observeNodeResponse(res, v.observer);
    next();
  };
  return (req, res, next) => {
    let v: ReturnType<HttpLimiter['evaluate']>;
    let info: HttpRequestInfo | undefined;
    try {
      info = requestFor(m.limiter, req, m.options, res);
      if (info === undefined) {
        next();
        return;
      }
      if (m.peers.pending) watch(m, req, info);
      v = m.limiter.evaluate(info);
    } catch (error) {
      next(error);
      return;
    }
    const again = info.operationRulesOnly === true;
    if (isPromiseLike(v)) v.then((r) => apply(r, res, next, again), next);
    else apply(v, res, next, again);
  };
}

/**
 * Wraps a node:http request handler: the handler runs only for allowed and exempt requests. A store error that
 * surfaces is answered with a plain 500, since a bare handler has no error stack to pass it to.
 *
 * @param limiter - from `createHttpLimiter`.
 * @param handler - your `(req, res)` handler.
 * @param options - identity, operation, params and cost functions, and `warn`.
 * @throws SluiceError `ERR_INVALID_OPTION` at mount time, as {@link rateLimitMiddleware}, and for a handler
 * that is not a function.
 *
 * @example
 * ```ts
 * createServer(withRateLimit(httpLimiter, (req, res) => res.end('hello'))).listen(3000, '127.0.0.1');
 * ```
 */
export function withRateLimit(
  limiter: HttpLimiter,
  handler: (req: IncomingMessage, res: ServerResponse) => void,
  options: NodeRateLimitOptions = {},
): (req: IncomingMessage, res: ServerResponse) => void {
  const m = mount('withRateLimit', limiter, options);
  if (typeof handler !== 'function') {
    throw invalidOption('sluice/node withRateLimit handler', 'a function (req, res) => void', handler);
  }
  // A wrapper decides each request exactly once, so it needs no mark on the request (which would cost a shape
  // change of every IncomingMessage) and no `next` closure per request.
  const fail = (res: ServerResponse): void => {
    if (!res.headersSent) {
      res.statusCode = 500;
      res.setHeader('Content-Type', 'text/plain; charset=utf-8');
    }
    res.end('Internal Server Error');
  };
  const finish = (v: Verdict, req: IncomingMessage, res: ServerResponse): void => {
    if (v.action === 'deny') {
      sendDenial(res, v);
      return;
    }
    applyHeaders(res, v.headers);
    if (v.observer !== undefined) observeNodeResponse(res, v.observer, req);
    handler(req, res);
  };
  return (req, res) => {
    let v: ReturnType<HttpLimiter['evaluate']>;
    try {
      const info = nodeRequestInfo(req, m.options, res);
      if (m.peers.pending) watch(m, req, info);
      v = m.limiter.evaluate(info);
    } catch {
      fail(res);
      return;
    }
    if (isPromiseLike(v))
      v.then(
        (r) => finish(r, req, res),
        () => fail(res),
      );
    else finish(v, req, res);
  };
}
