import type { RefillOptions } from 'sluice';
import type { CountOption, KeyKind } from 'sluice/http';
import type { ClassScope } from './class-catalogue.js';
import type { CorsConfig } from './cors-config.js';
import type { DecisionConfig } from './decision-config.js';
import type { EnvoyConfig } from './envoy-config.js';
import type { QuotaConfig } from './quota-config.js';
import type { RequestLogging } from './request-logging.js';
import type { ConcurrencyConfig } from './resolve-concurrency.js';
import type { CostConfig } from './resolve-cost.js';
import type { OverloadConfig, Priority } from './resolve-overload.js';

/** Waiting for tokens instead of a refusal at once (`queue` of a tier or endpoint rule). */
export interface QueueConfig {
  /** Tokens waiting requests may owe ahead of the refill. */
  readonly limit: number;
  /** The longest a request waits, in milliseconds. */
  readonly maxWaitMs: number;
  /** Admission order: only `fifo`, the engine's order. */
  readonly order: 'fifo';
}

/** A tier: a per-minute bucket and a per-hour bucket, or no limit at all. */
export interface TierConfig {
  readonly name: string;
  /** Clients of an unlimited tier are exempt (still counted in metrics). */
  readonly unlimited: boolean;
  /** Tokens per minute of the minute bucket (0 when unlimited). */
  readonly perMinute: number;
  /** Capacity of the minute bucket: `burstLimit`, default `requestsPerMinute`. */
  readonly burst: number;
  /** Requests per hour, or `undefined` when the tier has no hourly limit. */
  readonly perHour: number | undefined;
  /** The tier's policies are shadows: counted and reported in metrics, never denying (trying out a limit). */
  readonly shadow: boolean;
  /** The minute bucket's queue; `undefined` refuses at once. */
  readonly queue?: QueueConfig | undefined;
  /** The 429 problem `code` of the tier's policies; `undefined` for `rate_limited`. */
  readonly problemCode?: string | undefined;
  /** A cost settled from the response (`cost:`); `undefined` charges one token per request. */
  readonly cost?: CostConfig | undefined;
  /** Which responses count (`count:`); `undefined` for all. */
  readonly count?: CountOption | undefined;
  /** Requests of one client in flight at once (`concurrentRequests`); `undefined` for no such limit. */
  readonly concurrency?: ConcurrencyConfig | undefined;
  /** How much the tier's requests matter when the upstream is over capacity; `undefined` for `normal`. */
  readonly priority?: Priority | undefined;
}

/** A per-endpoint rule: its own bucket per client key, checked with the tier's buckets. */
export interface EndpointRule {
  /** Position in `rateLimiting.endpoints`. */
  readonly index: number;
  /** The policy name in headers and metrics. */
  readonly name: string;
  readonly pattern: string;
  /** Upper-case methods the rule applies to; `undefined` for all. */
  readonly methods: readonly string[] | undefined;
  /** Tokens per window (`refill.tokens` for a stepped refill). */
  readonly limit: number;
  /** Window in whole seconds (`refill.every` for a stepped refill). */
  readonly windowSeconds: number;
  readonly burst: number;
  /** Stepped refill (`refill: { tokens, every }` of the rule or its class); absent refills continuously. */
  readonly refill?: RefillOptions | undefined;
  /** The class the limits come from, when the rule names one. */
  readonly className: string | undefined;
  /** The rule's policy is a shadow: counted and reported in metrics, never denying (trying out a limit). */
  readonly shadow: boolean;
  /** The rule's queue; `undefined` refuses at once. */
  readonly queue?: QueueConfig | undefined;
  /** The 429 problem `code` of the rule's policy; `undefined` for `rate_limited`. */
  readonly problemCode?: string | undefined;
  /** A cost settled from the response (`cost:` of the rule, else of its class). */
  readonly cost?: CostConfig | undefined;
  /** Which responses count (`count:` of the rule, else of its class); `undefined` for all. */
  readonly count?: CountOption | undefined;
  /**
   * A concurrency rule (`concurrent`): requests of one client in flight at once on the endpoint, instead of
   * `limit` per window (then 0); `undefined` for a rate rule.
   */
  readonly concurrency?: ConcurrencyConfig | undefined;
  /** How much the rule's requests matter when the upstream is over capacity; `undefined` for the tier's. */
  readonly priority?: Priority | undefined;
}

/**
 * A policy class of the `ratelimit` section: `ratelimit.<class>.per_minute` and `.burst`, keyed by
 * `ratelimit.<class>.key` (default `caller`) with scope `ratelimit.<class>.scope` (default `request`); a class of
 * `ratelimit.catalogue` takes key and scope from the catalogue.
 */
export interface ClassConfig {
  readonly name: string;
  /** Tokens per minute; with `refill`, its average rate `tokens x 60 / every` (which may be fractional). */
  readonly perMinute: number;
  readonly burst: number;
  /** Stepped refill (`ratelimit.<class>.refill`): `tokens` every `every` seconds; absent refills continuously. */
  readonly refill?: RefillOptions | undefined;
  /** How the class's buckets are keyed: endpoint rules naming the class use this key kind. */
  readonly key: KeyKind;
  /** `connection` classes are taken once per gateway connection; endpoint rules cannot name them. */
  readonly scope: ClassScope;
  /** A cost settled from the response, for the endpoint rules naming the class. */
  readonly cost?: CostConfig | undefined;
  /** Which responses count, for the endpoint rules naming the class. */
  readonly count?: CountOption | undefined;
  /** Slots per key of a class counting requests in flight (`concurrent`); `undefined` for a rate class. */
  readonly concurrent?: number | undefined;
}

/** JWT verification settings. */
export interface JwtConfig {
  readonly jwksFile: string | undefined;
  readonly jwksUrl: string | undefined;
  readonly issuer: string | undefined;
  readonly audience: string | readonly string[] | undefined;
  readonly algorithms: readonly string[] | undefined;
  readonly clockToleranceSeconds: number;
  /** Tokens without an `exp` claim are refused (`identity.jwt.requireExp`, default true). */
  readonly requireExp: boolean;
  readonly claims: {
    readonly tenant: string;
    readonly client: string;
    readonly user: string;
    readonly tier: string;
  };
}

/** Names of the identity headers a trusted auth layer sets. */
export interface IdentityHeaders {
  readonly tenant: string;
  readonly client: string;
  readonly user: string;
  readonly tier: string;
}

/** Redis store settings (exactly one of url, cluster, sentinel). */
export interface RedisConfig {
  readonly url: string | undefined;
  readonly clusterNodes: readonly string[] | undefined;
  readonly sentinel:
    | { readonly name: string; readonly nodes: readonly string[]; readonly password: string | undefined }
    | undefined;
}

/** The validated, resolved configuration of the gateway, frozen; every default applied. */
export interface GatewayConfig {
  /** The file it came from (absolute), or `undefined` for text loaded directly. */
  readonly file: string | undefined;
  readonly enabled: boolean;
  readonly defaultTier: string;
  readonly tiers: Readonly<Record<string, TierConfig>>;
  readonly endpoints: readonly EndpointRule[];
  readonly classes: Readonly<Record<string, ClassConfig>>;
  readonly maxTrackedKeys: number;
  readonly sweepIntervalMs: number;
  readonly server: {
    readonly host: string;
    readonly port: number;
    readonly mode: 'production' | 'development';
    readonly trustedProxies: readonly string[];
    readonly proxyHeader: 'x-forwarded-for' | 'forwarded';
    readonly maxBodyBytes: number;
    /**
     * How long a request body may take before `bodyMinRate` counts (`server.bodyTimeout`); `0` turns the body
     * deadline off.
     */
    readonly bodyTimeoutMs: number;
    /**
     * Bytes per second a request body must keep after `bodyTimeoutMs` (`server.bodyMinRate`): each extends its
     * deadline by a second; `0` wants the whole body within `bodyTimeoutMs`.
     */
    readonly bodyMinRate: number;
    /**
     * Most connections the proxy listener holds open at once, over every thread of the process
     * (`server.maxConnections`); `0` is no cap, `undefined` a cap derived at start from the open file limit (see
     * `defaultMaxConnections`).
     */
    readonly maxConnections: number | undefined;
    /**
     * Most connections one client address holds open at once (`server.maxConnectionsPerClient`), trusted proxies
     * not counted; `0` is no cap.
     */
    readonly maxConnectionsPerClient: number;
    readonly shutdownTimeoutMs: number;
    readonly requestIdHeader: string;
    readonly tls:
      | { readonly cert: string; readonly key: string; readonly clientCa: string | undefined }
      | undefined;
  };
  readonly upstream: {
    readonly url: string | undefined;
    readonly connectTimeoutMs: number;
    readonly responseTimeoutMs: number;
    readonly bodyTimeoutMs: number;
    readonly preserveHost: boolean;
    readonly connections: number;
    /**
     * How long an admitted request may wait for a free upstream connection (`upstream.queueTimeout`) before it is
     * answered 503 `upstream_queue_timeout`; `0` waits without bound.
     */
    readonly queueTimeoutMs: number;
    /**
     * Upstream connections requests with a body may hold at once until their body has arrived whole
     * (`upstream.maxBodies`); the rest are kept for requests without a body. `0`: bodies may hold every connection.
     */
    readonly maxBodies: number;
    /**
     * Request bodies one client address may stream upstream at once, waiting ones included
     * (`upstream.maxBodiesPerClient`); one more is answered 429 `too_many_request_bodies`; `0` turns the cap off.
     */
    readonly maxBodiesPerClient: number;
  };
  readonly store: {
    readonly type: 'memory' | 'redis';
    readonly redis: RedisConfig | undefined;
    readonly failureMode: 'open' | 'closed' | 'local';
    readonly timeoutMs: number;
    /** Gateways sharing the Redis store's limits; the `local` failure mode divides every limit by it. */
    readonly nodeCount: number;
    /** How long a gateway's concurrency slots on the Redis store outlive its last renewal (`store.leaseTime`). */
    readonly leaseTimeMs: number;
  };
  readonly identity: {
    readonly jwt: JwtConfig | undefined;
    readonly apiKeys: { readonly file: string; readonly header: string } | undefined;
    readonly headers: IdentityHeaders | undefined;
    /** The class failed credentials count against, and its limits. */
    readonly publicAuth: ClassConfig;
  };
  readonly exemptions: {
    /** `[METHOD ]pattern` entries. */
    readonly endpoints: readonly string[];
    readonly mtlsSubjects: readonly string[] | undefined;
    readonly loopbackInDevelopment: boolean;
  };
  readonly headers: { readonly mode: 'draft-11' | 'legacy' | 'both' | 'none' };
  /** How request targets are made canonical (`target:`): encoded slashes refused or decoded, `;` refused, stripped or kept. */
  readonly target: {
    readonly encodedSlashes: 'reject' | 'decode';
    readonly pathParameters: 'reject' | 'strip' | 'keep';
  };
  /** Absolute URI base of problem types, or `undefined` for `about:blank`. */
  readonly problems: { readonly typeBase: string | undefined };
  readonly keys: { readonly prefix: string };
  readonly metrics: { readonly enabled: boolean; readonly prefix: string };
  readonly admin:
    | {
        readonly host: string;
        readonly port: number;
        readonly token: string;
        /** Who the token stands for in the audit log of overrides (`admin.token_name`, default `admin`). */
        readonly tokenName: string;
      }
    | undefined;
  /** `level`: the pino level of the gateway's lines; `requests`: which requests get a request line (any level). */
  readonly logging: { readonly level: string; readonly requests: RequestLogging };
  readonly reload: { readonly watch: boolean };
  /** The HTTP decision API (NGINX `auth_request`), or `undefined` when off. */
  readonly decision: DecisionConfig | undefined;
  /** The Envoy rate limit service (gRPC), or `undefined` when off. */
  readonly envoy: EnvoyConfig | undefined;
  /** Tenant quota tracking, or `undefined` when off. */
  readonly quota: QuotaConfig | undefined;
  /** Browser origins allowed cross-origin, with the fields they may read, or `undefined` when off. */
  readonly cors: CorsConfig | undefined;
  /** Automatic blocks of keys limited again and again (`penalty:`), or `undefined` when off. */
  readonly penalty: PenaltyConfig | undefined;
  /** Load shedding toward the upstream (`overload:`), or `undefined` when off. */
  readonly overload?: OverloadConfig | undefined;
}

/** The `penalty:` section, resolved: durations in milliseconds. */
export interface PenaltyConfig {
  /** Denials that trigger a block. */
  readonly after: number;
  /** The window denials are counted in. */
  readonly withinMs: number;
  /** The first block's length. */
  readonly blockMs: number;
  /** The ceiling of the doubling. */
  readonly maxBlockMs: number;
  /** A key with no block for this long starts again at `blockMs`. */
  readonly forgetAfterMs: number;
  /** The status while blocked. */
  readonly status: 403 | 429;
}

/** The bucket failed credentials count against when `ratelimit.rl.public_auth` is not configured. */
export const DEFAULT_PUBLIC_AUTH: ClassConfig = Object.freeze({
  name: 'rl.public_auth',
  perMinute: 10,
  burst: 10,
  key: 'ip',
  scope: 'request',
});
