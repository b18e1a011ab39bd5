import type { Decision, MaybePromise } from '../core/index.js';
import type { ClosableResponse } from './disconnect-signal.js';
import type { ResponseObserver } from './response-observer.js';

/**
 * Request headers as the HTTP layer reads them: a plain object of lower-case names (Node's `IncomingHttpHeaders`,
 * Fastify's `request.headers`) or anything with a `get(name)` method (the Fetch `Headers` of Hono, undici,
 * Workers). Only the few headers the limiter needs are ever read, so no adapter copies the whole set.
 */
export type HeaderSource =
  | Readonly<Record<string, string | readonly string[] | undefined>>
  | { get(name: string): string | null | undefined };

/**
 * Who is calling, as established by the application's authentication before the limiter runs. Every field is
 * optional; a key kind whose field is missing falls back to the client IP (the anonymous fallback). Values must
 * come from verified credentials: a value the client can choose freely would let it pick a fresh bucket per
 * request.
 */
export interface Identity {
  /** The authenticated actor (user, service account): key kind `principal`. */
  readonly principal?: string;
  /** The tenant: with `client` for key kind `tenant-client`, with `user` for `tenant-user`. */
  readonly tenant?: string;
  /** The OAuth client or application id within the tenant. */
  readonly client?: string;
  /** The end user within the tenant. */
  readonly user?: string;
  /** The raw API key; only its SHA-256 hash ever reaches a bucket key, a log or a header. */
  readonly apiKey?: string;
  /** A device id: key kind `device` (the ticket's "device or token"; `token` is used when it is absent). */
  readonly device?: string;
  /** An API token id (not the secret): the fallback of key kind `device`. */
  readonly token?: string;
  /** A connection id (for example a WebSocket connection): key kind `connection`. */
  readonly connection?: string;
  /** An agent actor id: key kind `agent`. */
  readonly agent?: string;
  /** A human operator behind a terminal session: key kind `human`. */
  readonly human?: string;
  /** A managed host or machine id: key kind `host`. */
  readonly host?: string;
  /** The caller's tier (`free`, `standard`): rules with `tier` match on it; `exempt.tiers` exempts it. */
  readonly tier?: string;
  /** Any further facts an exemption predicate or a custom key function wants (tier, mTLS subject...). */
  readonly [extra: string]: unknown;
}

/**
 * The framework-neutral view of one request that {@link HttpLimiter.evaluate} decides. Adapters build it from
 * their framework's request; the gateway builds it from the proxied request.
 */
export interface HttpRequestInfo {
  /** The method, upper case (`GET`); compared case-insensitively. */
  readonly method: string;
  /** The request target's path; a query string (`?...`) is ignored. */
  readonly path: string;
  /** The request headers. */
  readonly headers: HeaderSource;
  /** The connecting peer's address as the socket reports it (`::ffff:127.0.0.1`, `203.0.113.9`). */
  readonly remoteAddress: string | undefined;
  /**
   * The client address when the caller has already resolved it from trusted proxies (a decision API that is told
   * the original client by the proxy asking it). When present, `remoteAddress` and forwarding headers are not
   * consulted.
   */
  readonly clientIp?: string;
  /**
   * The IP part of bucket keys for `clientIp`, as {@link ipKey} gives it (`ip:192.0.2.1`, `ip:2001:db8:1:2::/64`),
   * when the caller keeps one per client: a log replay deciding millions of requests of a few thousand clients
   * saves a cache lookup per request. Read only together with `clientIp`; the caller answers for it being that
   * address's key (another value keys the request's IP buckets by it).
   */
  readonly clientIpKey?: string;
  /** Route parameters known to the caller (for key kind `param`); a path pattern's `:name` captures add to them. */
  readonly params?: Readonly<Record<string, string | undefined>>;
  /** The verified caller; absent or partial for anonymous requests. */
  readonly identity?: Identity;
  /** The operation class of the matched route (for rules with `operation`), for example `rl.write`. */
  readonly operation?: string;
  /** The request's correlation id when the caller already assigned one (else read from the request id header). */
  readonly correlationId?: string;
  /** The client connection (for example a TLS socket), passed through untouched to `exempt.when`. */
  readonly socket?: unknown;
  /** Whole tokens this request costs; overrides the rules' cost. Integer >= 1. */
  readonly cost?: number;
  /**
   * Decide only rules that name an `operation` (no path rules, no failed-credentials gate). Adapters set it when
   * a route-level middleware runs on a request that a global one already decided, so that path rules are never
   * charged twice.
   */
  readonly operationRulesOnly?: boolean;
  /**
   * Aborts when the client goes away (the adapters abort it when the connection closes before the answer). Read
   * only when a queueing policy makes the request wait: an abort ends the wait, returns its tokens and frees its
   * place in the queue. Absent, a request waits its turn or until `maxWaitMs` whatever the client does.
   */
  readonly signal?: AbortSignal;
  /**
   * What tells that the client went away, read only when the request waits in a queue: the response (its early
   * close) or a Fetch `Request` (its signal). Adapters set it instead of `signal`, so that no signal is made per
   * request (a getter in an object literal would make every request object slow).
   */
  readonly disconnect?: ClosableResponse | { readonly signal: AbortSignal };
}

/** A response header to set: `[name, value]`, the name in its canonical case. */
export type HeaderPair = readonly [name: string, value: string];

/** What to do with a request. */
export type VerdictAction =
  /** Proceed; set `headers` on whatever response the handler writes. */
  | 'allow'
  /** Answer now with `status`, `headers` and `body`; never call the handler. */
  | 'deny'
  /** No limit applies (exempt endpoint, exempt client, or no rule matched); proceed, set nothing. */
  | 'exempt';

/**
 * The answer of {@link HttpLimiter.evaluate}: everything an adapter needs to respond, already formatted.
 */
export interface Verdict {
  readonly action: VerdictAction;
  /**
   * 200 for allow and exempt; 400 for a request target that cannot be matched safely (a fragment, an encoded
   * slash) or credentials whose failure names a `refusal`; 401 for credentials that `identify` refused; 429 when
   * limited; 503 when the store cannot decide.
   */
  readonly status: 200 | 400 | 401 | 429 | 503;
  /**
   * What happened, for logs and metrics: `allowed`, `limited`, `public_auth_limited`, `store_unavailable`,
   * `store_unavailable_open`, `bad_target_<code>`, `invalid_credentials_<reason>`, the code of a credential
   * failure's `refusal`, `exempt_<reason>`, or
   * `queue_abandoned` (the request's `signal` aborted while it waited in a queue; 429, nobody is left to read it).
   */
  readonly outcome: string;
  /** Why the request is exempt (`endpoint`, `loopback`, `tier`, `no_rule`, or what `exempt.when` returned). */
  readonly exemptReason?: string;
  /** The names of the rules that matched, in configuration order (one frozen array per rule combination). */
  readonly rules?: readonly string[];
  /** The bucket key of the first check (without `keyPrefix`), for logs and admin tools. */
  readonly key?: string;
  /** The identity the request was decided with (from `identify`, or the request's own). */
  readonly identity?: Identity;
  /** Headers to set on the response, in order: rate-limit headers, and on a denial the problem headers. */
  readonly headers: readonly HeaderPair[];
  /** The `application/problem+json` body of a denial (RFC 9457); absent otherwise. */
  readonly body?: string;
  /** The engine's decision; absent for exempt requests. */
  readonly decision?: Decision;
  /** The resolved client IP (unmapped, not yet truncated to /64); absent when it was not needed. */
  readonly clientIp?: string;
  /**
   * What the admitted request holds until its response ends (a concurrency slot, a cost settled from the
   * response): present only on an allowed verdict whose rules hold something. Whoever writes the response feeds
   * it (the adapters do, through `observeNodeResponse` or `observeFetchResponse`) and ends it exactly once.
   */
  readonly observer?: ResponseObserver;
}

/** A verdict now (memory store) or later (remote stores). */
export type MaybeVerdict = MaybePromise<Verdict>;
