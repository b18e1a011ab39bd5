import type {
  FastifyInstance,
  FastifyPluginCallback,
  FastifyReply,
  FastifyRequest,
  HookHandlerDoneFunction,
} from 'fastify';
import type fastifyPlugin from 'fastify-plugin';
import { invalidOption } from '../core/index.js';
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
import { requirePeer } from '../http/peer-package.js';
import { emitWarning, peerWarningsOf } from '../http/peer-warnings.js';
import { HeaderName } from '../http/rate-limit-headers.js';
import { checkedSettings } from './route-settings-check.js';

/** Per-route settings, under `config.rateLimit` of a route. */
export interface FastifyRouteRateLimit {
  /** The operation class of the route, for rules with `operation`. */
  readonly operation?: string;
  /** Whole tokens a request to this route costs. */
  readonly cost?: number;
}

/** Options of the {@link sluiceFastify} plugin. */
export interface SluiceFastifyOptions {
  /** From `createHttpLimiter` (`sluice/http`). */
  readonly limiter: HttpLimiter;
  /** The verified caller; use hook `preHandler` when it comes from an authentication hook. */
  readonly identify?: (request: FastifyRequest) => Identity | undefined;
  /**
   * The hook that decides: `onRequest` (default: the earliest, before the body is read, so a flood costs
   * least) or `preValidation`/`preHandler` when identity is set by an earlier hook.
   */
  readonly hook?: 'onRequest' | 'preValidation' | 'preHandler';
  /**
   * Receives the once-only warnings (a request without a peer address, a forwarding header from a peer that is
   * not a trusted proxy) with their stable code. Default: `process.emitWarning`.
   */
  readonly warn?: WarnFunction;
}

const KINDS = { limiter: 'checked', identify: 'function', hook: 'checked', warn: 'function' } as const;
/** Options of `register` itself, which Fastify leaves in the plugin's options object. */
const REGISTER_OPTIONS = ['prefix', 'logLevel', 'logSerializers'];
const NO_PEER_HINT =
  'The socket has no remote address, as on a Unix socket (where forwarding headers cannot be trusted either): ' +
  'key such traffic by identity (identify) rather than by IP.';

declare module 'fastify' {
  interface FastifyContextConfig {
    /** Sluice per-route settings; `false` exempts the route from every rule. */
    rateLimit?: FastifyRouteRateLimit | false;
  }
}

/**
 * The framework-neutral view of a Fastify request (route params included, since routing is done by then). For
 * authentication code that reports failed credentials; the plugin itself builds the view from settings it read
 * once per route, since `request.routeOptions` builds a new object on every access.
 *
 * @param request - the Fastify request.
 * @param identify - the identity function, if any.
 */
export function fastifyRequestInfo(
  request: FastifyRequest,
  identify?: (request: FastifyRequest) => Identity | undefined,
): HttpRequestInfo {
  const route = request.routeOptions.config?.rateLimit;
  return requestInfo(request, identify, route || undefined);
}

function requestInfo(
  request: FastifyRequest,
  identify: ((request: FastifyRequest) => Identity | undefined) | undefined,
  route: FastifyRouteRateLimit | undefined,
  reply?: FastifyReply,
): HttpRequestInfo {
  return {
    method: request.method,
    path: request.url,
    headers: request.headers,
    remoteAddress: request.raw.socket.remoteAddress,
    identity: identify?.(request),
    operation: route?.operation,
    params: request.params as Record<string, string>,
    cost: route?.cost,
    // Read only for a request that waits in a queue: no signal is made per request.
    disconnect: reply?.raw,
  };
}

/**
 * Header names as Fastify stores them. `reply.header` lower-cases every name it is given; a name that is already
 * lower case comes back unchanged, so passing it lower case saves a string per header per request. The names
 * Sluice writes are matched first by identity (the verdict's names are the same interned constants), which costs
 * less than a map lookup; any other name (a custom request id header) goes through a small map.
 */
const lowerNames = new Map<string, string>();
function lowerName(name: string): string {
  switch (name) {
    case HeaderName.RateLimitPolicy:
      return 'ratelimit-policy';
    case HeaderName.RateLimit:
      return 'ratelimit';
    case HeaderName.RetryAfter:
      return 'retry-after';
    case HeaderName.ContentType:
      return 'content-type';
    case HeaderName.CacheControl:
      return 'cache-control';
    case HeaderName.ContentTypeOptions:
      return 'x-content-type-options';
    case 'X-Request-Id':
      return 'x-request-id';
  }
  let lower = lowerNames.get(name);
  if (lower === undefined) {
    lower = name.toLowerCase();
    if (lowerNames.size < 256) lowerNames.set(name, lower);
  }
  return lower;
}

/** Leaves the problem body as it is: it is JSON already, and `reply.send` must not add a charset to its type. */
const asIs = (payload: unknown): string => payload as string;

function apply(v: Verdict, reply: FastifyReply, done: HookHandlerDoneFunction): void {
  const h = v.headers;
  for (let i = 0; i < h.length; i++) {
    const pair = h[i];
    reply.header(lowerName(pair[0]), pair[1]);
  }
  if (v.action !== 'deny') {
    // Fastify writes through Node's response: the same feeder as node:http's, and only for a verdict that holds
    // something (a concurrency slot, a cost).
    if (v.observer !== undefined) observeNodeResponse(reply.raw, v.observer, reply.request.raw);
    done();
    return;
  }
  // The connection is kept (Node reads the rest of a small body after the answer; a chunked one is read and
  // dropped first, up to the drain bound) unless a large upload is still unread or its `100 Continue` was held
  // back: reading it would cost more than a new connection, so say so and close.
  const close = denialCloses(reply.request.raw);
  if (typeof close === 'boolean') sendDenial(v, reply, close);
  else void close.then((c) => sendDenial(v, reply, c));
}

function sendDenial(v: Verdict, reply: FastifyReply, close: boolean): void {
  if (reply.sent || reply.raw.destroyed) return;
  if (close) reply.header('connection', 'close');
  // The body goes out as a string through a pass-through serializer: Fastify then sends the content type as set
  // (a plain string send would append a charset, and the answer would differ from the other adapters), and Node
  // writes the head and the body in one chunk, without the copy into a Buffer per denial.
  reply
    .code(v.status)
    .serializer(asIs)
    .send(v.body ?? '');
}

/** What a route's `config.rateLimit` holds. */
type RouteSetting = FastifyRouteRateLimit | false | undefined;

/**
 * Reads `config.rateLimit` of the request's route. `request.routeOptions` builds an object of a dozen fields on
 * every access, for the one field read here, so the route's own config is read from the route context Fastify
 * keeps on the request (the object `routeOptions.config` comes from). That context is not a public field: its key
 * is looked up on the first request and kept only when it leads to the very object `routeOptions.config` gives,
 * and a request without it (another Fastify, a later version) is read through `routeOptions` as before. One
 * reader per plugin instance, so two Fastify copies in one process never share a key. Exported for tests only
 * (not from `sluice/fastify`).
 */
export function routeSettings(): (request: FastifyRequest) => RouteSetting {
  // undefined: not looked up yet; null: no usable key, read through routeOptions.
  let key: symbol | null | undefined;
  const viaOptions = (request: FastifyRequest): RouteSetting => request.routeOptions.config?.rateLimit;
  return (request) => {
    if (key === undefined) key = contextKeyOf(request);
    if (key === null) return viaOptions(request);
    const context = (
      request as unknown as Record<symbol, { config?: { rateLimit?: RouteSetting } } | undefined>
    )[key];
    return context === undefined ? viaOptions(request) : context.config?.rateLimit;
  };
}

/** The symbol under which Fastify keeps the request's route context, when it leads to `routeOptions.config`. */
function contextKeyOf(request: FastifyRequest): symbol | null {
  const config = request.routeOptions.config;
  if (config === undefined || config === null) return null;
  for (const s of Object.getOwnPropertySymbols(request)) {
    const c = (request as unknown as Record<symbol, unknown>)[s];
    if (typeof c === 'object' && c !== null && (c as { config?: unknown }).config === config) return s;
  }
  return null;
}

const HOOKS = ['onRequest', 'preValidation', 'preHandler'] as const;

const WHERE = 'sluice/fastify plugin options';

const plugin: FastifyPluginCallback<SluiceFastifyOptions> = (fastify: FastifyInstance, options, done) => {
  let limiter: HttpLimiter;
  let o: SluiceFastifyOptions;
  try {
    o = adapterOptions<SluiceFastifyOptions>(WHERE, options, KINDS, REGISTER_OPTIONS);
    limiter = httpLimiterOption(`${WHERE}.limiter`, o.limiter);
    if (o.hook !== undefined && !HOOKS.includes(o.hook)) {
      throw invalidOption(`${WHERE}.hook`, 'onRequest, preValidation or preHandler', o.hook);
    }
  } catch (error) {
    done(error as Error);
    return;
  }
  const name = o.hook ?? 'onRequest';
  const identify = o.identify;
  const warn = o.warn ?? emitWarning;
  const peers = peerWarningsOf(limiter);
  const decide = (
    route: FastifyRouteRateLimit | undefined,
    request: FastifyRequest,
    reply: FastifyReply,
    next: HookHandlerDoneFunction,
  ): void => {
    let v: ReturnType<HttpLimiter['evaluate']>;
    try {
      const info = requestInfo(request, identify, route, reply);
      // A socket that closed before this point has no address either; that is no configuration matter.
      if (peers.pending && (info.remoteAddress !== undefined || !request.raw.socket.destroyed)) {
        peers.check('fastify', info.remoteAddress, info.headers, warn, NO_PEER_HINT);
      }
      v = limiter.evaluate(info);
    } catch (error) {
      next(error as Error);
      return;
    }
    if (isPromiseLike(v)) v.then((r) => apply(r, reply, next), next);
    else apply(v, reply, next);
  };
  // One instance-wide hook decides every request, reading the route's settings as it goes. A hook per route
  // added from onRoute (as @fastify/rate-limit does) reads them once, but onRoute never sees the routes an
  // application registered before the plugin, and those would pass unlimited and unannounced. Fastify builds
  // `routeOptions` on each access, which costs about as much as the second hook a per-route design still needs
  // for requests that match no route (D-H08).
  const settings = routeSettings();
  const checked = checkedSettings();
  // Routes registered from here on have their settings checked at registration; earlier ones, which onRoute
  // never sees, on their first request (see checkedSettings).
  fastify.addHook('onRoute', (route) => checked.add(route.method, route.url, route.config?.rateLimit));
  fastify.addHook(
    name as 'onRequest',
    (request: FastifyRequest, reply: FastifyReply, next: HookHandlerDoneFunction) => {
      const route = settings(request);
      if (route === false) next();
      else if (route === undefined || checked.has(route)) decide(route, request, reply, next);
      else {
        try {
          checked.add(request.routeOptions.method, request.routeOptions.url ?? request.url, route);
        } catch (error) {
          next(error as Error);
          return;
        }
        decide(route, request, reply, next);
      }
    },
  );
  done();
};

// Loaded here rather than imported, so that a missing fastify-plugin is named with the command that installs it.
const fp = requirePeer<{ default: typeof fastifyPlugin }>('fastify-plugin', 'sluice/fastify').default;

/**
 * The Fastify 5 plugin (wrapped with fastify-plugin, so it covers every route of the instance, whether registered
 * before or after it, and requests that match no route). Per route,
 * `config: { rateLimit: { operation: 'rl.write', cost: 2 } }` sets the operation class and cost, and
 * `config: { rateLimit: false }` exempts the route. Registering fails with
 * SluiceError `ERR_INVALID_OPTION` for a missing limiter, an unknown option (another library's, such as
 * `max` or `timeWindow`, named with a hint) or an invalid `hook`; registering a route after the plugin fails with
 * it for an invalid `config.rateLimit` (a `cost` that is not a safe integer >= 1, a non-string `operation`, an
 * unknown key). A route registered before the plugin, which Fastify does not show it, has its setting checked
 * on its first request instead: an invalid one answers every request of the route with that error (status
 * 500, logged by Fastify), and no request of it is decided. Register the plugin first to fail at startup.
 *
 * @example
 * ```ts
 * await app.register(sluiceFastify, { limiter: http });
 * app.post('/items', { config: { rateLimit: { operation: 'rl.write' } } }, handler);
 * ```
 */
export const sluiceFastify = fp(plugin, { fastify: '5.x', name: 'sluice' });
