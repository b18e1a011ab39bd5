import type { Context, MiddlewareHandler } from 'hono';
import type { HttpLimiter, HttpRequestInfo, Identity, Verdict } from '../http/index.js';

/** Options of the Hono middleware. */
export interface HonoRateLimitOptions {
  /** The verified caller (for example from `c.get('user')`). */
  readonly identify?: (c: Context) => Identity | undefined;
  /**
   * The peer address. Default: the Node.js socket of `@hono/node-server` (`c.env.incoming.socket`). On other
   * runtimes pass the runtime's connection info (for example `getConnInfo(c).remote.address` of `hono/bun`).
   */
  readonly remoteAddress?: (c: Context) => string | undefined;
  /** The operation class of the route, for rules with `operation`. */
  readonly operation?: string | ((c: Context) => string | undefined);
  /** Whole tokens this request costs; default the rules' cost. */
  readonly cost?: (c: Context) => number | undefined;
}

function nodeSocketAddress(c: Context): string | undefined {
  const env = c.env as { incoming?: { socket?: { remoteAddress?: string } } } | undefined;
  return env?.incoming?.socket?.remoteAddress;
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
    path: start < 0 ? '/' : url.slice(start),
    headers: c.req.raw.headers,
    remoteAddress: (options.remoteAddress ?? nodeSocketAddress)(c),
    identity: options.identify?.(c),
    operation: typeof op === 'function' ? op(c) : op,
    cost: options.cost?.(c),
  };
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
 * @param options - identity, peer address, operation and cost.
 *
 * @example
 * ```ts
 * app.use(rateLimit(http));
 * app.post('/items', rateLimit(http, { operation: 'rl.write' }), (c) => c.json({ ok: true }));
 * ```
 */
export function rateLimit(limiter: HttpLimiter, options: HonoRateLimitOptions = {}): MiddlewareHandler {
  return async (c, next) => {
    let info = honoRequestInfo(c, options);
    const marked = c as Context & { [DECIDED]?: HttpLimiter };
    const outer = marked[DECIDED] !== limiter;
    if (!outer) {
      // Mounted globally and on the route: the global pass decides path rules; decide operation rules only.
      if (info.operation === undefined) return next();
      info = { ...info, operationRulesOnly: true };
    }
    marked[DECIDED] = limiter;
    const v = await limiter.evaluate(info);
    if (v.action === 'deny') {
      const headers = new Headers();
      for (const [name, value] of v.headers) headers.set(name, value);
      return new Response(v.body ?? '', { status: v.status, headers });
    }
    await next();
    if (v.headers.length > 0) setAll(c, v, outer);
  };
}
