import type { Context, MiddlewareHandler } from 'hono';
import { adapterOptions, httpLimiterOption } from '../http/adapter-options.js';
import {
  type DrainableRequest,
  denialCloses,
  type HttpLimiter,
  type HttpRequestInfo,
  type Identity,
  observeFetchResponse,
  type Verdict,
  type WarnFunction,
} from '../http/index.js';
import { emitWarning, peerWarningsOf } from '../http/peer-warnings.js';
import { runtimeRemoteAddress } from './peer-address.js';

/** Options of the Hono middleware. */
export interface HonoRateLimitOptions {
  /** The verified caller (for example from `c.get('user')`). */
  readonly identify?: (c: Context) => Identity | undefined;
  /**
   * The peer address. Default: what the runtime passes as `c.env`: the socket on `@hono/node-server`, the
   * server's `requestIP` on Bun, `remoteAddr` on Deno, the source IP on AWS Lambda, `context.ip` on Netlify,
   * `CF-Connecting-IP` on Cloudflare Workers. Elsewhere pass the runtime's connection info, for example
   * `(c) => getConnInfo(c).remote.address` with the `getConnInfo` of your runtime's Hono adapter.
   */
  readonly remoteAddress?: (c: Context) => string | undefined;
  /** The operation class of the route, for rules with `operation`. */
  readonly operation?: string | ((c: Context) => string | undefined);
  /** Whole tokens this request costs; default the rules' cost. */
  readonly cost?: (c: Context) => number | undefined;
  /**
   * Receives the once-only warnings (a request without a peer address, a forwarding header from a peer that is
   * not a trusted proxy) with their stable code. Default: `process.emitWarning`, or `console.warn` on runtimes
   * without it.
   */
  readonly warn?: WarnFunction;
}

const KINDS = {
  identify: 'function',
  remoteAddress: 'function',
  operation: 'string-or-function',
  cost: 'function',
  warn: 'function',
} as const;
const NO_PEER_HINT =
  'The runtime gave no peer address (the default finds it on @hono/node-server, Bun, Deno, AWS Lambda, ' +
  'Netlify and Cloudflare Workers; app.request() in tests has none). Pass remoteAddress to rateLimit, for ' +
  "example (c) => getConnInfo(c).remote.address with the getConnInfo of your runtime's Hono adapter.";

function nodeSocketClosed(c: Context): boolean {
  const env = c.env as { incoming?: { socket?: { destroyed?: boolean } } } | undefined;
  return env?.incoming?.socket?.destroyed === true;
}

/** The Node request under `@hono/node-server`, whose unread body decides whether a denial keeps the socket. */
function nodeIncoming(c: Context): DrainableRequest | undefined {
  const env = c.env as { incoming?: { complete?: boolean; headers?: object; on?: unknown } } | undefined;
  const incoming = env?.incoming;
  return typeof incoming?.complete === 'boolean' &&
    typeof incoming.headers === 'object' &&
    typeof incoming.on === 'function'
    ? (incoming as unknown as DrainableRequest)
    : undefined;
}

/**
 * On `@hono/node-server`, the request target as sent when it is not a path (absolute or asterisk form): the Fetch
 * URL hides that form, and the other adapters refuse it (400 `not_origin_form`), so it is matched as sent and
 * refused the same way. `undefined` for a path, and on runtimes that give only the URL.
 */
function nodeTargetNotOrigin(c: Context): string | undefined {
  const target = (c.env as { incoming?: { url?: unknown } } | undefined)?.incoming?.url;
  return typeof target === 'string' && target.charCodeAt(0) !== 0x2f ? target : undefined;
}

/**
 * The framework-neutral view of a Hono request. Headers are read through the Fetch `Headers` object, never
 * copied.
 */
export function honoRequestInfo(c: Context, options: HonoRateLimitOptions = {}): HttpRequestInfo {
  const op = options.operation;
  const url = c.req.url;
  // The path and query of the URL, as node:http's req.url gives them, so every adapter matches the same text.
  const start = url.indexOf('/', url.indexOf('//') + 2);
  return {
    method: c.req.method,
    path: nodeTargetNotOrigin(c) ?? (start < 0 ? '/' : url.slice(start)),
    headers: c.req.raw.headers,
    remoteAddress: (options.remoteAddress ?? runtimeRemoteAddress)(c),
    identity: options.identify?.(c),
    operation: typeof op === 'function' ? op(c) : op,
    cost: options.cost?.(c),
    // The Fetch request, whose signal @hono/node-server aborts when the client disconnects: read only for a
    // request that waits in a queue.
    disconnect: c.req.raw,
  };
}

/** The request body's declared length: what a Fetch request tells of its body before anyone reads it. */
function declaredLength(c: Context): number {
  const n = Number(c.req.raw.headers.get('content-length') ?? 0);
  return Number.isSafeInteger(n) && n > 0 ? n : 0;
}

/** Marks a context as decided by a limiter, so a route-level middleware decides only operation rules. */
const DECIDED = Symbol('sluice.decided');

function write(headers: Headers, v: Verdict, append: boolean): void {
  const h = v.headers;
  for (let i = 0; i < h.length; i++) {
    const [name, value] = h[i];
    // The outer (global) middleware writes last; its list items then go first, as in the other adapters.
    if (append && (name === 'RateLimit' || name === 'RateLimit-Policy') && headers.has(name)) {
      headers.set(name, `${value}, ${headers.get(name)}`);
    } else headers.set(name, value);
  }
}

function setAll(c: Context, v: Verdict, append: boolean): void {
  try {
    write(c.res.headers, v, append);
  } catch {
    // A response passed through from fetch() has immutable headers: copy it once, then set.
    c.res = new Response(c.res.body, c.res);
    write(c.res.headers, v, append);
  }
}

/**
 * Hono middleware: answers 429 (503) with the problem body, or runs the handler and sets the rate-limit
 * headers on whatever response results (success, error, not found). A store error the failure mode surfaces
 * is thrown to Hono's `onError`.
 *
 * @param limiter - from `createHttpLimiter` (`sluice/http`).
 * @param options - identity, peer address, operation, cost and `warn`.
 * @throws SluiceError `ERR_INVALID_OPTION` at mount time for a limiter that is not an HttpLimiter (another
 * library's options in its place, such as hono-rate-limiter's `{ windowMs, limit }`, are named) or an unknown
 * or invalid option.
 *
 * @example
 * ```ts
 * app.use(rateLimit(http));
 * app.post('/items', rateLimit(http, { operation: 'rl.write' }), (c) => c.json({ ok: true }));
 * ```
 */
export function rateLimit(limiter: HttpLimiter, options: HonoRateLimitOptions = {}): MiddlewareHandler {
  const http = httpLimiterOption('sluice/hono rateLimit(limiter)', limiter);
  const o = adapterOptions<HonoRateLimitOptions>('sluice/hono rateLimit options', options, KINDS);
  const warn = o.warn ?? emitWarning;
  const peers = peerWarningsOf(http);
  return async (c, next) => {
    let info = honoRequestInfo(c, o);
    const marked = c as Context & { [DECIDED]?: HttpLimiter };
    const outer = marked[DECIDED] !== http;
    if (!outer) {
      // Mounted globally and on the route: the global pass decides path rules; decide operation rules only.
      if (info.operation === undefined) return next();
      info = { ...info, operationRulesOnly: true };
    }
    marked[DECIDED] = http;
    // On Node, a socket that closed before this point has no address either; that is no configuration matter.
    if (peers.pending && (info.remoteAddress !== undefined || !nodeSocketClosed(c))) {
      peers.check('hono', info.remoteAddress, info.headers, warn, NO_PEER_HINT);
    }
    const v = await http.evaluate(info);
    if (v.action === 'deny') {
      const headers = new Headers();
      for (const [name, value] of v.headers) headers.set(name, value);
      // On Node the connection is kept (the rest of a small body is read after the answer; a chunked one is read
      // and dropped first, up to the drain bound) unless a large upload is still unread or its `100 Continue` was
      // held back: say so and close. Other runtimes manage their connections themselves.
      const incoming = nodeIncoming(c);
      if (incoming !== undefined && (await denialCloses(incoming))) headers.set('Connection', 'close');
      return new Response(v.body ?? '', { status: v.status, headers });
    }
    const observer = v.observer;
    if (observer === undefined) {
      await next();
      if (v.headers.length > 0) setAll(c, v, outer);
      return;
    }
    // A verdict that holds something (a concurrency slot, a cost) ends it with the response: its body is read
    // through the observer, and a handler that fails without a response still ends it.
    try {
      await next();
    } catch (error) {
      observer.end({ completed: false, status: 0, bytesSent: 0, bytesReceived: declaredLength(c) });
      throw error;
    }
    if (v.headers.length > 0) setAll(c, v, outer);
    let res = c.res;
    if (c.req.method === 'HEAD' && res.body !== null) {
      // Hono answers HEAD through the GET route and then drops that body without reading or cancelling it, so an
      // observed body would never end and its slot would be held for good: end with the head, nothing sent.
      void res.body.cancel().catch(() => undefined);
      res = new Response(null, { status: res.status, statusText: res.statusText, headers: res.headers });
    }
    const observed = observeFetchResponse(res, observer, declaredLength(c));
    // Cleared first: Hono's setter copies the old response's headers onto the new one, which would bring back a
    // header the observer removed.
    c.res = undefined as unknown as Response;
    c.res = observed;
  };
}
