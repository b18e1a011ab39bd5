import type { NextFunction, Request, RequestHandler, Response } from 'express';
import { adapterOptions, httpLimiterOption } from '../http/adapter-options.js';
import {
  denialCloses,
  type HttpLimiter,
  type HttpRequestInfo,
  type Identity,
  isPromiseLike,
  observeNodeResponse,
  type Verdict,
  type WarnFunction,
} from '../http/index.js';
import { emitWarning, peerWarningsOf } from '../http/peer-warnings.js';

/** Per-request facts an application supplies to the Express adapter. */
export interface ExpressRateLimitOptions {
  /** The verified caller (for example from `req.user` set by your authentication middleware). */
  readonly identify?: (req: Request) => Identity | undefined;
  /**
   * The operation class, for rules with `operation`: a constant when the middleware is mounted on one route
   * (`app.post('/items', rateLimit(http, { operation: 'rl.write' }), handler)`), or a function.
   */
  readonly operation?: string | ((req: Request) => string | undefined);
  /** Whole tokens this request costs; default the rules' cost. */
  readonly cost?: (req: Request) => number | undefined;
  /**
   * Receives the once-only warnings (a request without a peer address, a forwarding header from a peer that is
   * not a trusted proxy) with their stable code. Default: `process.emitWarning`.
   */
  readonly warn?: WarnFunction;
}

const KINDS = {
  identify: 'function',
  operation: 'string-or-function',
  cost: 'function',
  warn: 'function',
} as const;
const NO_PEER_HINT =
  'The socket has no remote address, as on a Unix socket (where forwarding headers cannot be trusted either): ' +
  'key such traffic by identity (identify) rather than by IP.';

/**
 * The framework-neutral view of an Express request. The peer address is the socket's, never `req.ip`: the
 * limiter applies its own trusted-proxy list, independent of Express's `trust proxy` setting.
 *
 * @param req - the Express request.
 * @param options - identity, operation and cost functions.
 */
export function expressRequestInfo(req: Request, options: ExpressRateLimitOptions = {}): HttpRequestInfo {
  const op = options.operation;
  return {
    method: req.method,
    path: req.originalUrl,
    headers: req.headers,
    remoteAddress: req.socket.remoteAddress,
    identity: options.identify?.(req),
    operation: typeof op === 'function' ? op(req) : op,
    params: req.params as Record<string, string>,
    cost: options.cost?.(req),
    // Read only for a request that waits in a queue: no signal is made per request. Express links `req.res`.
    disconnect: req.res,
  };
}

/** Marks a request as decided by a limiter, so a route-level middleware decides only operation rules. */
const DECIDED = Symbol('sluice.decided');

function apply(v: Verdict, res: Response, next: NextFunction, again: boolean): void {
  const h = v.headers;
  for (let i = 0; i < h.length; i++) {
    const [name, value] = h[i];
    // A second decision on the request adds its draft-11 items as further field lines of the same lists.
    // Node's `appendHeader`, not Express's `res.append`: the same field lines, and the middleware also runs in
    // chains without Express (connect, polka), whose responses have no `append`.
    if (again && (name === 'RateLimit' || name === 'RateLimit-Policy') && res.hasHeader(name))
      res.appendHeader(name, value);
    else res.setHeader(name, value);
  }
  if (v.action !== 'deny') {
    // Only a verdict that holds something (a concurrency slot, a cost) wraps the response.
    if (v.observer !== undefined) observeNodeResponse(res, v.observer, res.req);
    next();
    return;
  }
  // res.end, not res.send: send would add a charset and an ETag and the answer would differ from the other
  // adapters (the conformance suite holds them byte for byte).
  const body = v.body ?? '';
  res.statusCode = v.status;
  res.setHeader('Content-Length', Buffer.byteLength(body));
  // The connection is kept (Node reads the rest of a small body after the answer; a chunked one is read and
  // dropped first, up to the drain bound) unless a large upload is still unread or its `100 Continue` was held
  // back: reading it would cost more than a new connection, so say so and close.
  const close = denialCloses(res.req);
  if (typeof close === 'boolean') endDenial(res, body, close);
  else void close.then((c) => endDenial(res, body, c));
}

function endDenial(res: Response, body: string, close: boolean): void {
  if (res.headersSent || res.destroyed) return;
  if (close) res.setHeader('Connection', 'close');
  res.end(body);
}

/**
 * Express 5 middleware: sets the rate-limit headers and continues, or answers 429 (503) with the problem body.
 * Mount it before your routes (`app.use(rateLimit(http))`) for path rules, or on a route with `operation` for
 * operation-class rules; a store error the failure mode surfaces goes to Express's error handling.
 *
 * @param limiter - from `createHttpLimiter` (`sluice/http`).
 * @param options - identity, operation, cost and `warn`.
 * @throws SluiceError `ERR_INVALID_OPTION` at mount time for a limiter that is not an HttpLimiter (another
 * library's options in its place, such as express-rate-limit's `{ windowMs, limit }`, are named) or an unknown
 * or invalid option.
 *
 * @example
 * ```ts
 * app.use(rateLimit(http, { identify: (req) => (req.user ? { principal: req.user.id } : undefined) }));
 * ```
 */
export function rateLimit(limiter: HttpLimiter, options: ExpressRateLimitOptions = {}): RequestHandler {
  const http = httpLimiterOption('sluice/express rateLimit(limiter)', limiter);
  const o = adapterOptions<ExpressRateLimitOptions>('sluice/express rateLimit options', options, KINDS);
  const warn = o.warn ?? emitWarning;
  const peers = peerWarningsOf(http);
  return (req, res, next) => {
    let v: ReturnType<HttpLimiter['evaluate']>;
    let again = false;
    try {
      let info = expressRequestInfo(req, o);
      // The mark goes into `res.locals` (Express's per-request object) rather than onto `req`: adding any property
      // to an Express request measured about 1.6 us (Express swaps its prototype, and V8 no longer reuses the
      // hidden class the addition leads to), more than the whole decision.
      const marked = (res.locals ?? req) as { [DECIDED]?: HttpLimiter };
      if (marked[DECIDED] === http) {
        // Mounted globally and on the route: the global pass decided path rules; decide operation rules only.
        if (info.operation === undefined) {
          next();
          return;
        }
        info = { ...info, operationRulesOnly: true };
        again = true;
      }
      marked[DECIDED] = http;
      // A socket that closed before this point has no address either; that is no configuration matter.
      if (peers.pending && (info.remoteAddress !== undefined || !req.socket.destroyed)) {
        peers.check('express', info.remoteAddress, info.headers, warn, NO_PEER_HINT);
      }
      v = http.evaluate(info);
    } catch (error) {
      next(error);
      return;
    }
    if (isPromiseLike(v)) v.then((r) => apply(r, res, next, again), next);
    else apply(v, res, next, again);
  };
}
