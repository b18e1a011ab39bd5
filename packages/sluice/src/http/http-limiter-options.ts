import {
  booleanOption,
  integerOption,
  invalidOption,
  Limiter,
  type MaybePromise,
  type OverrideStore,
  objectOption,
  type Policy,
  rejectUnknownKeys,
  stringOption,
} from '../core/index.js';
import type { LimiterMetrics } from '../metrics/limiter-metrics.js';
import { type ClientIpResolver, createClientIpResolver, type ProxyHeader } from './client-ip.js';
import { type HeaderMode, headerModeOption } from './header-mode.js';
import { readHeader } from './header-source.js';
import { type HttpMetricsSink, metricsOption } from './http-metrics.js';
import { compileEndpoint, type EndpointPattern } from './path-pattern.js';
import { problemTypeResolver } from './problem.js';
import {
  compileTargetCanonicalizer,
  type TargetCanonicalizer,
  type TargetOptions,
} from './request-target.js';
import { type CompiledRule, compileRule, type RuleOptions } from './rules.js';
import type { SettleEvents } from './settle-observer.js';
import type { HeaderPair, HttpRequestInfo, Identity } from './types.js';

/** The endpoints exempt by default: health, readiness, metrics and `.well-known`. */
export const DEFAULT_EXEMPT_ENDPOINTS: readonly string[] = Object.freeze([
  'GET /health',
  'GET /ready',
  'GET /metrics',
  'GET /.well-known/*',
]);

/** Exemptions: requests that no rule limits and that carry no rate-limit headers. */
export interface ExemptOptions<R extends HttpRequestInfo = HttpRequestInfo> {
  /** Endpoints (`GET /health`, `/internal/*`); replaces {@link DEFAULT_EXEMPT_ENDPOINTS} when given. */
  readonly endpoints?: readonly string[];
  /**
   * Exempt clients (mTLS service traffic and the like), asked before credentials are verified, with the
   * resolved client IP. Return `true` (reason `client`) or a reason of your own (a metric label, so keep the set
   * small); `false` or `undefined` to go on. Must not throw; a throw fails the request.
   */
  readonly when?: (request: R, clientIp: string | undefined) => boolean | string | undefined;
  /** Exempt loopback clients (127.0.0.0/8, ::1): for development only. Default false. */
  readonly loopback?: boolean;
  /** Tiers whose callers are exempt (an unlimited tier), by `identity.tier`. Default none. */
  readonly tiers?: readonly string[];
}

/** The failed-credentials rule: failed authentications use up a public-auth bucket keyed by client IP. */
export interface PublicAuthOptions<R extends HttpRequestInfo = HttpRequestInfo> {
  /** The policy whose bucket, keyed by client IP, failed authentications use up, for example `rl.public_auth`. */
  readonly policy: string;
  /**
   * Whether a failure with this reason counts. Default: every reason but `token_expired` and `use_dpop_nonce`,
   * which honest clients hit in normal operation.
   */
  readonly countFailure?: (reason: string | undefined) => boolean;
  /** Whether a request presents credentials; default: it has an `Authorization` header. */
  readonly hasCredentials?: (request: R) => boolean;
}

/** Credentials that `identify` refused: the request is answered 401 and, if it counts, charged to public auth. */
export interface CredentialFailure {
  /** Tells a failure from an identity. */
  readonly failed: true;
  /** Why, for example `invalid_token`, `token_expired` or `unknown_api_key` (part of the outcome label). */
  readonly reason: string;
  /** Whether the failure takes a public-auth token; default `publicAuth.countFailure(reason)`. */
  readonly counts?: boolean;
  /** The 401 problem's detail; default "The credentials are not valid.". */
  readonly detail?: string;
  /** Extra headers of the 401, for example `WWW-Authenticate: Bearer error="invalid_token"`. */
  readonly headers?: readonly HeaderPair[];
  /**
   * Answers 400 with a problem of this `code` (also the verdict's outcome) instead of the 401: credentials that
   * verified but name no caller the limiter can key, such as a bearer token whose tenant claim holds a control
   * character. Set `counts: false` with it: the credentials were no guess.
   */
  readonly refusal?: { readonly status: 400; readonly code: string };
}

/** What `identify` answers: the caller, a refusal of its credentials, or `undefined` for anonymous. */
export type IdentifyResult = Identity | CredentialFailure | undefined;

/** Options of {@link createHttpLimiter}. */
export interface HttpLimiterOptions<R extends HttpRequestInfo = HttpRequestInfo> {
  /** The engine limiter holding the policies and the store. */
  readonly limiter: Limiter;
  /** Which policies apply to which requests; see {@link RuleOptions}. */
  readonly rules: readonly RuleOptions[];
  /** Exempt endpoints and clients; default {@link DEFAULT_EXEMPT_ENDPOINTS}. */
  readonly exempt?: ExemptOptions<R>;
  /** Peers whose forwarding headers are believed (CIDRs, addresses, `loopback`...). Default none. */
  readonly trustedProxies?: readonly string[];
  /** The forwarding header those proxies write; default `x-forwarded-for`. */
  readonly proxyHeader?: ProxyHeader;
  /** Which rate-limit headers to send; default `both` (draft-11 `RateLimit` fields and `X-RateLimit-*`). */
  readonly headers?: HeaderMode;
  /** Add the partition key `pk` (a hash of the bucket key) to the draft-11 fields. Default false. */
  readonly partitionKey?: boolean;
  /**
   * Whether a rate-limit denial carries its `application/problem+json` body, its content headers and the
   * correlation id; default true. False is for callers that read verdicts and never send them (a replay of
   * access logs, a dry run): the decision, status, outcome, `RateLimit` fields and `Retry-After` stay, and no
   * body is built per denial. An adapter given such a limiter would answer a denial without a body.
   */
  readonly denialBodies?: boolean;
  /** Base URI of the problem `type` (white label), for example `https://errors.example.com/problems/`. */
  readonly problemTypeBase?: string;
  /** Request header holding the correlation id, echoed in a denial under the same name; default `X-Request-Id`. */
  readonly requestIdHeader?: string;
  /** Prefix of every bucket key (a namespace when several applications share a store); default empty. */
  readonly keyPrefix?: string;
  /** Keys longer than this are hashed; integer from 32 to 4096, default 200. */
  readonly maxKeyLength?: number;
  /** Wall clock in epoch milliseconds for `X-RateLimit-Reset` and the problem's `reset`; default `Date.now`. */
  readonly wallClock?: () => number;
  /**
   * Run-time overrides and blocks (`MemoryOverrides`, `SharedOverrides`, `RedisOverrides`): other sizes, no limit,
   * or a 403/429 refusal for matching keys, tenants, prefixes or address ranges. Absent: none, at no cost.
   */
  readonly overrides?: OverrideStore;
  /** The failed-credentials rule; absent turns it off. */
  readonly publicAuth?: PublicAuthOptions<R>;
  /** How request targets are made canonical before matching; see {@link TargetOptions}. */
  readonly target?: TargetOptions;
  /**
   * Who is calling, established after the exemptions and the failed-credentials gate, so that a client IP that
   * already failed too often is refused before its credentials are verified. A promise only where
   * verification is asynchronous (a JWKS fetch); an identity returned in the same tick keeps the memory store's
   * path free of promises. Without it, `request.identity` is used as given.
   */
  readonly identify?: (request: R, clientIp: string | undefined) => MaybePromise<IdentifyResult>;
  /** Called with an error the store threw; the request is answered 503. Default: nothing. */
  readonly onStoreError?: (error: unknown) => void;
  /**
   * Where the queues report: requests waiting now per queueing policy (`setQueueLength`) and how long each
   * waited (`recordQueueWait`). Decisions are not recorded here: the caller records the verdict's decision.
   */
  readonly queueMetrics?: Pick<LimiterMetrics, 'setQueueLength' | 'recordQueueWait'>;
  /**
   * Where costs settled from responses are reported (rules with `settle` or `count`): the units charged per
   * policy and the answers whose cost could not be read. A metrics sink (`PrometheusMetrics`) is one.
   */
  readonly settleMetrics?: SettleEvents;
  /**
   * Where every verdict is recorded: its decision (`recordDecision`, labelled by tier, first endpoint rule and
   * store kind, which counts the `rate_limit_exceeded_total` series of a denial), an exemption (`recordExempt`)
   * and a store that could not answer (`recordStoreError`), the last two when the sink has them. A
   * `PrometheusMetrics` (`sluice/prometheus`) or `OtelMetrics` (`sluice/otel`) is one. Default: nothing recorded.
   */
  readonly metrics?: HttpMetricsSink;
}

/** The options of a limiter, validated and compiled once. */
export interface ResolvedHttpLimiterOptions<R extends HttpRequestInfo> {
  readonly limiter: Limiter;
  readonly rules: readonly CompiledRule[];
  readonly mode: HeaderMode;
  readonly partitionKey: boolean;
  readonly denialBodies: boolean;
  readonly typeOf: ((slug: string) => string) | undefined;
  readonly requestIdName: string;
  readonly requestIdHeader: string;
  readonly keyPrefix: string;
  readonly maxKeyLength: number;
  readonly wallClock: () => number;
  readonly overrides: OverrideStore | undefined;
  readonly clientIp: ClientIpResolver;
  readonly exemptEndpoints: readonly EndpointPattern[];
  readonly exemptWhen: ExemptOptions<R>['when'];
  readonly exemptLoopback: boolean;
  readonly exemptTiers: ReadonlySet<string> | undefined;
  readonly authPolicy: Policy | undefined;
  readonly countFailure: (reason: string | undefined) => boolean;
  readonly hasCredentials: (request: R) => boolean;
  readonly canonical: TargetCanonicalizer;
  readonly identify: HttpLimiterOptions<R>['identify'];
  readonly onStoreError: ((error: unknown) => void) | undefined;
  readonly queueMetrics: Pick<LimiterMetrics, 'setQueueLength' | 'recordQueueWait'> | undefined;
  readonly settleMetrics: SettleEvents | undefined;
  readonly metrics: HttpMetricsSink | undefined;
}

const KNOWN = [
  'limiter',
  'rules',
  'exempt',
  'trustedProxies',
  'proxyHeader',
  'headers',
  'partitionKey',
  'denialBodies',
  'problemTypeBase',
  'requestIdHeader',
  'keyPrefix',
  'maxKeyLength',
  'wallClock',
  'overrides',
  'publicAuth',
  'target',
  'identify',
  'onStoreError',
  'queueMetrics',
  'settleMetrics',
  'metrics',
];

const NOT_COUNTED = new Set(['token_expired', 'use_dpop_nonce']);

/**
 * Validates every option of {@link createHttpLimiter} and compiles rules, exemptions and the target rules.
 *
 * @throws SluiceError `ERR_INVALID_OPTION` naming the option for any invalid option, `ERR_UNKNOWN_POLICY` for a
 * rule or `publicAuth` naming a policy the engine limiter does not have.
 */
export function resolveHttpLimiterOptions<R extends HttpRequestInfo>(
  options: HttpLimiterOptions<R>,
): ResolvedHttpLimiterOptions<R> {
  const o = objectOption('HttpLimiter options', options);
  rejectUnknownKeys('HttpLimiter options', o, KNOWN);
  if (!(o.limiter instanceof Limiter)) throw invalidOption('limiter', 'a Limiter from sluice', o.limiter);
  const limiter = o.limiter;
  if (!Array.isArray(o.rules)) throw invalidOption('rules', 'an array of rules', o.rules);
  const rules = (o.rules as RuleOptions[]).map((r, i) => compileRule(r, limiter, `rules[${i}]`));
  for (const r of rules) checkHeaderNames(r.policies, r.name);
  const requestIdName = stringOption('requestIdHeader', o.requestIdHeader, 'X-Request-Id');
  const requestIdHeader = requestIdName.toLowerCase();
  if (!/^[a-z0-9!#$%&'*+.^_|~\x60-]+$/.test(requestIdHeader)) {
    throw invalidOption('requestIdHeader', 'a header name', o.requestIdHeader);
  }
  const wallClock = (o.wallClock ?? Date.now) as () => number;
  if (typeof wallClock !== 'function')
    throw invalidOption('wallClock', 'a function returning epoch ms', wallClock);
  const exempt = resolveExempt<R>(o.exempt);
  const auth = resolvePublicAuth<R>(o.publicAuth, limiter);
  return Object.freeze({
    limiter,
    rules: Object.freeze(rules),
    mode: headerModeOption('headers', o.headers, 'both'),
    partitionKey: booleanOption('partitionKey', o.partitionKey, false),
    denialBodies: booleanOption('denialBodies', o.denialBodies, true),
    typeOf: problemTypeResolver(o.problemTypeBase),
    requestIdName,
    requestIdHeader,
    keyPrefix: o.keyPrefix === undefined || o.keyPrefix === '' ? '' : stringOption('keyPrefix', o.keyPrefix),
    maxKeyLength: integerOption('maxKeyLength', o.maxKeyLength, 32, 4096, 200),
    wallClock,
    overrides: overridesOption(o.overrides),
    clientIp: createClientIpResolver({
      trustedProxies: o.trustedProxies as readonly string[] | undefined,
      proxyHeader: o.proxyHeader as ProxyHeader | undefined,
    }),
    ...exempt,
    ...auth,
    canonical: compileTargetCanonicalizer(o.target as TargetOptions | undefined, 'target'),
    identify: optionalFunction<HttpLimiterOptions<R>['identify']>(
      'identify',
      o.identify,
      'a function (request, clientIp) => identity',
    ),
    onStoreError: optionalFunction<(e: unknown) => void>(
      'onStoreError',
      o.onStoreError,
      'a function (error) => void',
    ),
    queueMetrics:
      o.queueMetrics === undefined
        ? undefined
        : (objectOption('queueMetrics', o.queueMetrics) as Pick<
            LimiterMetrics,
            'setQueueLength' | 'recordQueueWait'
          >),
    settleMetrics:
      o.settleMetrics === undefined
        ? undefined
        : (objectOption('settleMetrics', o.settleMetrics) as SettleEvents),
    metrics: metricsOption(o.metrics),
  });
}

function overridesOption(value: unknown): OverrideStore | undefined {
  if (value === undefined) return undefined;
  const v = value as Partial<OverrideStore> | null;
  if (typeof v !== 'object' || v === null || typeof v.snapshot !== 'function') {
    throw invalidOption(
      'overrides',
      'an OverrideStore (MemoryOverrides, SharedOverrides or RedisOverrides)',
      value,
    );
  }
  return v as OverrideStore;
}

function resolveExempt<R extends HttpRequestInfo>(value: unknown) {
  const ex = value === undefined ? {} : objectOption('exempt', value);
  rejectUnknownKeys('exempt', ex, ['endpoints', 'when', 'loopback', 'tiers']);
  const list = ex.endpoints === undefined ? DEFAULT_EXEMPT_ENDPOINTS : ex.endpoints;
  if (!Array.isArray(list)) throw invalidOption('exempt.endpoints', 'an array of endpoints', list);
  const tiers = ex.tiers;
  if (
    tiers !== undefined &&
    (!Array.isArray(tiers) || tiers.some((t) => typeof t !== 'string' || t === ''))
  ) {
    throw invalidOption('exempt.tiers', 'an array of tier names', tiers);
  }
  return {
    exemptEndpoints: Object.freeze(
      list.map((e: string, i: number) => compileEndpoint(e, `exempt.endpoints[${i}]`)),
    ),
    exemptWhen: optionalFunction<ExemptOptions<R>['when']>(
      'exempt.when',
      ex.when,
      'a function (request, clientIp) => boolean or reason',
    ),
    exemptLoopback: booleanOption('exempt.loopback', ex.loopback, false),
    exemptTiers: tiers === undefined || tiers.length === 0 ? undefined : new Set(tiers as string[]),
  };
}

function resolvePublicAuth<R extends HttpRequestInfo>(value: unknown, limiter: Limiter) {
  let countFailure = (r: string | undefined): boolean => r === undefined || !NOT_COUNTED.has(r);
  let hasCredentials = (req: R): boolean => readHeader(req.headers, 'authorization') !== undefined;
  if (value === undefined) return { authPolicy: undefined, countFailure, hasCredentials };
  const pa = objectOption('publicAuth', value);
  rejectUnknownKeys('publicAuth', pa, ['policy', 'countFailure', 'hasCredentials']);
  const authPolicy = limiter.policy(stringOption('publicAuth.policy', pa.policy));
  checkHeaderNames([authPolicy], 'publicAuth');
  countFailure =
    optionalFunction<typeof countFailure>(
      'publicAuth.countFailure',
      pa.countFailure,
      'a function (reason) => boolean',
    ) ?? countFailure;
  hasCredentials =
    optionalFunction<typeof hasCredentials>(
      'publicAuth.hasCredentials',
      pa.hasCredentials,
      'a function (request) => boolean',
    ) ?? hasCredentials;
  return { authPolicy, countFailure, hasCredentials };
}

function optionalFunction<F>(option: string, value: unknown, expected: string): F | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== 'function') throw invalidOption(option, expected, value);
  return value as F;
}

/** Policy names go into headers: reject at construction what a header value cannot carry unchanged. */
function checkHeaderNames(policies: readonly Policy[], where: string): void {
  for (const p of policies) {
    if (!/^[\x21-\x7e]([\x20-\x7e]*[\x21-\x7e])?$/.test(p.name)) {
      throw invalidOption(
        `${where}: policy name`,
        'printable ASCII without leading or trailing spaces (it is sent in rate-limit headers)',
        p.name,
      );
    }
  }
}
