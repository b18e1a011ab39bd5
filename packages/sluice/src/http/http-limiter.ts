import {
  booleanOption,
  type Check,
  type Decision,
  ErrorCode,
  integerOption,
  invalidOption,
  Limiter,
  type MaybePromise,
  objectOption,
  type Policy,
  rejectUnknownKeys,
  SluiceError,
  stringOption,
} from '../core/index.js';
import { type ClientIpResolver, createClientIpResolver, type ProxyHeader } from './client-ip.js';
import { correlationIdOf } from './correlation-id.js';
import { type HeaderMode, headerModeOption } from './header-mode.js';
import { readHeader } from './header-source.js';
import { inRanges, NAMED_RANGES, parseIpRange } from './ip-address.js';
import { boundKey, partitionKeyOf } from './key-hash.js';
import { ipKey } from './keys.js';
import { isPromiseLike, whenReady } from './maybe-promise.js';
import { compileEndpoint, type EndpointPattern } from './path-pattern.js';
import { PROBLEM_CONTENT_TYPE, problemTypeResolver, rateLimitProblemBody } from './problem.js';
import {
  formatRateLimit,
  formatRateLimitPolicy,
  HeaderName,
  HeaderPlan,
  legacyPolicyName,
  mostRestrictive,
  resetEpochSeconds,
} from './rate-limit-headers.js';
import { type CompiledRule, compileRule, type RuleOptions } from './rules.js';
import type { HeaderPair, HttpRequestInfo, Verdict } from './types.js';

/** The endpoints exempt by default (the design contract): health, readiness, metrics and `.well-known`. */
export const DEFAULT_EXEMPT_ENDPOINTS: readonly string[] = Object.freeze([
  'GET /health',
  'GET /ready',
  'GET /metrics',
  'GET /.well-known/*',
]);

/** Exemptions: requests that no rule limits and that carry no rate-limit headers. */
export interface ExemptOptions {
  /** Endpoints (`GET /health`, `/internal/*`); replaces {@link DEFAULT_EXEMPT_ENDPOINTS} when given. */
  readonly endpoints?: readonly string[];
  /**
   * Exempt clients: mTLS service traffic, the unlimited tier, and the like. Called once per request that is not
   * an exempt endpoint, with the resolved client IP. Must not throw; a throw fails the request.
   */
  readonly when?: (request: HttpRequestInfo, clientIp: string | undefined) => boolean;
  /** Exempt loopback clients (127.0.0.0/8, ::1): for development only. Default false. */
  readonly loopback?: boolean;
}

/** The failed-credentials rule (the ticket's public-auth bucket). */
export interface PublicAuthOptions {
  /** The policy whose bucket, keyed by client IP, failed authentications use up, for example `rl.public_auth`. */
  readonly policy: string;
  /**
   * Whether a failure with this reason counts. Default: every reason but `token_expired` and `use_dpop_nonce`,
   * which honest clients hit in normal operation.
   */
  readonly countFailure?: (reason: string | undefined) => boolean;
  /** Whether a request presents credentials; default: it has an `Authorization` header. */
  readonly hasCredentials?: (request: HttpRequestInfo) => boolean;
}

/** Options of {@link createHttpLimiter}. */
export interface HttpLimiterOptions {
  /** The engine limiter holding the policies and the store. */
  readonly limiter: Limiter;
  /** Which policies apply to which requests; see {@link RuleOptions}. */
  readonly rules: readonly RuleOptions[];
  /** Exempt endpoints and clients; default {@link DEFAULT_EXEMPT_ENDPOINTS}. */
  readonly exempt?: ExemptOptions;
  /** Peers whose forwarding headers are believed (CIDRs, addresses, `loopback`...). Default none. */
  readonly trustedProxies?: readonly string[];
  /** The forwarding header those proxies write; default `x-forwarded-for`. */
  readonly proxyHeader?: ProxyHeader;
  /** Which rate-limit headers to send; default `draft-11`. */
  readonly headers?: HeaderMode;
  /** Add the partition key `pk` (a hash of the bucket key) to the draft-11 fields. Default false. */
  readonly partitionKey?: boolean;
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
  /** The failed-credentials rule; absent turns it off. */
  readonly publicAuth?: PublicAuthOptions;
}

const KNOWN = [
  'limiter',
  'rules',
  'exempt',
  'trustedProxies',
  'proxyHeader',
  'headers',
  'partitionKey',
  'problemTypeBase',
  'requestIdHeader',
  'keyPrefix',
  'maxKeyLength',
  'wallClock',
  'publicAuth',
];

/** The precomputed state of one combination of matching rules. */
interface Plan {
  readonly rules: readonly CompiledRule[];
  /** One entry per check: the rule that keys it. */
  readonly keyedBy: readonly CompiledRule[];
  readonly policies: readonly Policy[];
  readonly header: HeaderPlan;
  readonly captures: boolean;
  readonly cost: number | ((request: HttpRequestInfo) => number);
  /** Per policy, its legacy `X-RateLimit-Policy` value. */
  readonly legacyNames: ReadonlyMap<Policy, string>;
}

const EMPTY: readonly HeaderPair[] = Object.freeze([]);
const EXEMPT: Verdict = Object.freeze({ action: 'exempt', status: 200, headers: EMPTY });
const ALLOW_NO_HEADERS: Verdict = Object.freeze({ action: 'allow', status: 200, headers: EMPTY });
const DENY_HEADERS: readonly HeaderPair[] = Object.freeze([
  Object.freeze([HeaderName.ContentType, PROBLEM_CONTENT_TYPE] as const),
  Object.freeze([HeaderName.CacheControl, 'no-store'] as const),
  Object.freeze([HeaderName.ContentTypeOptions, 'nosniff'] as const),
]);
const LOOPBACK = NAMED_RANGES.loopback.map((r) => parseIpRange(r)!);
const NOT_COUNTED = new Set(['token_expired', 'use_dpop_nonce']);

/**
 * HTTP semantics over the engine: rules, exemptions, client IP, keys, headers and problem responses, framework
 * neutral. Adapters (`sluice/node`, `sluice/express`, `sluice/fastify`, `sluice/hono`) and the gateway call
 * {@link HttpLimiter.evaluate} once per request and apply the {@link Verdict}.
 */
export interface HttpLimiter {
  /** The engine limiter. */
  readonly limiter: Limiter;
  /** The header mode in force. */
  readonly headerMode: HeaderMode;
  /** The resolved client IP of a request (trusted proxies applied, IPv4-mapped unmapped). */
  readonly clientIp: ClientIpResolver;
  /**
   * Decides a request: exempt endpoints and clients first, then every matching rule's policies at once (all or
   * nothing), then, when the request presents credentials and `publicAuth` is configured, the failed-credentials
   * gate. Synchronous with the memory store, a promise with remote stores.
   *
   * @returns the verdict; a denial is a verdict, never a throw.
   * @throws SluiceError `ERR_INVALID_COST` for an invalid `cost`; store errors when the store's failure mode
   * surfaces them (the promise rejects).
   */
  evaluate(request: HttpRequestInfo): MaybePromise<Verdict>;
  /**
   * The failed-credentials gate alone: a 429 verdict when the request presents credentials and its client IP's
   * public-auth bucket is empty (so the credentials need not be verified), else an allow verdict without headers.
   * {@link HttpLimiter.evaluate} already runs it; call it directly where authentication runs elsewhere.
   */
  checkCredentials(request: HttpRequestInfo): MaybePromise<Verdict>;
  /**
   * Counts a failed authentication against the public-auth bucket of the request's client IP, unless
   * `countFailure(reason)` excludes it (an expired token by default).
   *
   * @param request - the request whose credentials failed.
   * @param reason - the failure reason, for example `invalid_token` or `token_expired`.
   * @returns the decision of the public-auth bucket, or `undefined` when the failure does not count.
   * @throws SluiceError `ERR_INVALID_OPTION` when `publicAuth` was not configured.
   */
  recordFailedCredentials(request: HttpRequestInfo, reason?: string): MaybePromise<Decision | undefined>;
  /** The bucket keys a request would use, one per policy, for debugging and admin tools. */
  keysOf(request: HttpRequestInfo): readonly Check[];
}

/**
 * Builds the framework-neutral HTTP limiter.
 *
 * @param options - see {@link HttpLimiterOptions}.
 * @returns the frozen limiter.
 * @throws SluiceError `ERR_INVALID_OPTION` naming the option for any invalid option, `ERR_UNKNOWN_POLICY` for a
 * rule or `publicAuth` naming a policy the engine limiter does not have.
 *
 * @example
 * ```ts
 * import { Limiter } from 'sluice';
 * import { MemoryStore } from 'sluice/memory';
 * import { createHttpLimiter } from 'sluice/http';
 * const limiter = new Limiter({
 *   policies: [{ name: 'rl.write', quota: 120, window: 60, burst: 30 }],
 *   store: new MemoryStore(),
 * });
 * const http = createHttpLimiter({
 *   limiter,
 *   rules: [{ methods: ['POST', 'PUT', 'PATCH', 'DELETE'], path: '/api/*', policies: ['rl.write'], key: 'principal' }],
 *   trustedProxies: ['10.0.0.0/8'],
 * });
 * const verdict = http.evaluate({ method: 'POST', path: '/api/items', headers: {}, remoteAddress: '192.0.2.1' });
 * ```
 */
export function createHttpLimiter(options: HttpLimiterOptions): HttpLimiter {
  const o = objectOption('HttpLimiter options', options);
  rejectUnknownKeys('HttpLimiter options', o, KNOWN);
  if (!(o.limiter instanceof Limiter)) throw invalidOption('limiter', 'a Limiter from sluice', o.limiter);
  const limiter = o.limiter;
  if (!Array.isArray(o.rules)) throw invalidOption('rules', 'an array of rules', o.rules);
  const rules = (o.rules as RuleOptions[]).map((r, i) => compileRule(r, limiter, `rules[${i}]`));
  for (const r of rules) checkHeaderNames(r.policies, r.name);
  const mode = headerModeOption('headers', o.headers, 'draft-11');
  const draft = mode === 'draft-11' || mode === 'both';
  const legacy = mode === 'legacy' || mode === 'both';
  const pk = booleanOption('partitionKey', o.partitionKey, false);
  const typeOf = problemTypeResolver(o.problemTypeBase);
  const requestIdName = stringOption('requestIdHeader', o.requestIdHeader, 'X-Request-Id');
  const requestIdHeader = requestIdName.toLowerCase();
  if (!/^[a-z0-9!#$%&'*+.^_|~\x60-]+$/.test(requestIdHeader)) {
    throw invalidOption('requestIdHeader', 'a header name', o.requestIdHeader);
  }
  const keyPrefix = o.keyPrefix === undefined ? '' : stringOption('keyPrefix', o.keyPrefix);
  const maxKeyLength = integerOption('maxKeyLength', o.maxKeyLength, 32, 4096, 200);
  const wallClock = (o.wallClock ?? Date.now) as () => number;
  if (typeof wallClock !== 'function')
    throw invalidOption('wallClock', 'a function returning epoch ms', wallClock);
  const clientIp = createClientIpResolver({
    trustedProxies: o.trustedProxies as readonly string[] | undefined,
    proxyHeader: o.proxyHeader as ProxyHeader | undefined,
  });

  // Exemptions.
  const ex = o.exempt === undefined ? {} : objectOption('exempt', o.exempt);
  rejectUnknownKeys('exempt', ex, ['endpoints', 'when', 'loopback']);
  const exemptList = ex.endpoints === undefined ? DEFAULT_EXEMPT_ENDPOINTS : ex.endpoints;
  if (!Array.isArray(exemptList))
    throw invalidOption('exempt.endpoints', 'an array of endpoints', exemptList);
  const exemptEndpoints: EndpointPattern[] = exemptList.map((e: string, i: number) =>
    compileEndpoint(e, `exempt.endpoints[${i}]`),
  );
  const exemptWhen = ex.when as ExemptOptions['when'];
  if (exemptWhen !== undefined && typeof exemptWhen !== 'function') {
    throw invalidOption('exempt.when', 'a function (request, clientIp) => boolean', exemptWhen);
  }
  const exemptLoopback = booleanOption('exempt.loopback', ex.loopback, false);

  // Failed credentials.
  let authPolicy: Policy | undefined;
  let countFailure: (reason: string | undefined) => boolean = (r) => r === undefined || !NOT_COUNTED.has(r);
  let hasCredentials = (req: HttpRequestInfo): boolean =>
    readHeader(req.headers, 'authorization') !== undefined;
  let authPlan: HeaderPlan | undefined;
  if (o.publicAuth !== undefined) {
    const pa = objectOption('publicAuth', o.publicAuth);
    rejectUnknownKeys('publicAuth', pa, ['policy', 'countFailure', 'hasCredentials']);
    authPolicy = limiter.policy(stringOption('publicAuth.policy', pa.policy));
    checkHeaderNames([authPolicy], 'publicAuth');
    authPlan = new HeaderPlan([authPolicy]);
    if (pa.countFailure !== undefined) {
      if (typeof pa.countFailure !== 'function') {
        throw invalidOption('publicAuth.countFailure', 'a function (reason) => boolean', pa.countFailure);
      }
      countFailure = pa.countFailure as typeof countFailure;
    }
    if (pa.hasCredentials !== undefined) {
      if (typeof pa.hasCredentials !== 'function') {
        throw invalidOption(
          'publicAuth.hasCredentials',
          'a function (request) => boolean',
          pa.hasCredentials,
        );
      }
      hasCredentials = pa.hasCredentials as typeof hasCredentials;
    }
  }

  // Plans per combination of matching rules, built on first use: the set of combinations is small in practice
  // (bounded by the rules that can match together) and each plan holds only precomputed strings.
  const plans = new Map<number | string, Plan>();
  const planFor = (matched: CompiledRule[], id: number | string): Plan => {
    let plan = plans.get(id);
    if (plan !== undefined) return plan;
    const policies: Policy[] = [];
    const keyedBy: CompiledRule[] = [];
    for (const r of matched) {
      for (const p of r.policies) {
        if (policies.includes(p)) continue; // the first matching rule keys a policy
        policies.push(p);
        keyedBy.push(r);
      }
    }
    const first = matched[0].cost;
    let cost: Plan['cost'] = first;
    if (matched.some((r) => r.cost !== first)) {
      // Several costs: the largest applies, since every policy is charged the same cost all or nothing.
      cost = (req) => Math.max(...matched.map((r) => (typeof r.cost === 'function' ? r.cost(req) : r.cost)));
    }
    plan = Object.freeze({
      rules: matched,
      keyedBy,
      policies,
      header: new HeaderPlan(policies),
      captures: matched.some((r) => r.captures),
      cost,
      legacyNames: new Map(policies.map((p) => [p, legacyPolicyName(p.name)])),
    });
    if (plans.size < 4096) plans.set(id, plan);
    return plan;
  };

  const match = (req: HttpRequestInfo): Plan | undefined => {
    const onlyOps = req.operationRulesOnly === true;
    if (rules.length <= 30) {
      // The common case: the set of matching rules is a bit mask, and a known mask finds its plan without
      // building a list.
      let mask = 0;
      for (let i = 0; i < rules.length; i++) {
        if (onlyOps && rules[i].operations === undefined) continue;
        if (rules[i].match(req)) mask |= 1 << i;
      }
      if (mask === 0) return undefined;
      const known = plans.get(mask);
      if (known !== undefined) return known;
      return planFor(
        rules.filter((_, i) => (mask & (1 << i)) !== 0),
        mask,
      );
    }
    const matched: CompiledRule[] = [];
    for (const r of rules) if (!(onlyOps && r.operations === undefined) && r.match(req)) matched.push(r);
    if (matched.length === 0) return undefined;
    return planFor(matched, matched.map((r) => rules.indexOf(r)).join(','));
  };

  const withCaptures = (req: HttpRequestInfo, plan: Plan): HttpRequestInfo => {
    if (!plan.captures) return req;
    let params: Record<string, string | undefined> | undefined;
    for (const r of plan.rules) {
      const c = r.captures ? r.endpoint?.pattern.capture(req.path) : undefined;
      if (c !== undefined) params = { ...c, ...params };
    }
    return params === undefined ? req : { ...req, params: { ...params, ...req.params } };
  };

  const checksOf = (req: HttpRequestInfo, plan: Plan, ip: string | undefined): Check[] => {
    const view = withCaptures(req, plan);
    const ipk = ipKey(ip);
    const n = plan.policies.length;
    const checks: Check[] = new Array(n);
    for (let i = 0; i < n; i++) {
      const key = plan.keyedBy[i].key(view, ipk, ip);
      checks[i] = {
        policy: plan.policies[i],
        key: boundKey(keyPrefix === '' ? key : keyPrefix + key, maxKeyLength),
      };
    }
    return checks;
  };

  const rateLimitHeaders = (
    plan: HeaderPlan,
    d: Decision,
    names: ReadonlyMap<Policy, string> | undefined,
  ) => {
    const out: HeaderPair[] = [];
    const known =
      d.outcomes.length > 0 && d.reason !== 'store_unavailable' && d.reason !== 'store_unavailable_open';
    if (draft && plan.policyValue !== '') {
      if (pk && known) {
        const keys = d.outcomes.map((x) => partitionKeyOf(x.key));
        out.push([HeaderName.RateLimitPolicy, formatRateLimitPolicy(plan.policies, { partitionKeys: keys })]);
        out.push([HeaderName.RateLimit, formatRateLimit(d.outcomes, { partitionKeys: keys })]);
      } else {
        out.push(plan.policyPair);
        if (known) out.push([HeaderName.RateLimit, plan.state(d.outcomes)]);
      }
    }
    if (legacy && known) {
      const m = mostRestrictive(d);
      if (m !== undefined) {
        out.push([HeaderName.LegacyLimit, String(m.policy.quota)]);
        out.push([HeaderName.LegacyRemaining, String(m.remaining)]);
        out.push([HeaderName.LegacyReset, String(resetEpochSeconds(wallClock(), m.resetSeconds))]);
        out.push([HeaderName.LegacyPolicy, names?.get(m.policy) ?? legacyPolicyName(m.policy.name)]);
      }
    }
    return out;
  };

  const verdictOf = (
    req: HttpRequestInfo,
    header: HeaderPlan,
    names: ReadonlyMap<Policy, string> | undefined,
    d: Decision,
    ip: string | undefined,
  ): Verdict => {
    const headers = mode === 'none' ? [] : rateLimitHeaders(header, d, names);
    if (d.allowed) {
      if (headers.length === 0) return ALLOW_NO_HEADERS;
      return { action: 'allow', status: 200, headers, decision: d, clientIp: ip };
    }
    const correlationId = correlationIdOf(req.headers, requestIdHeader);
    headers.push([HeaderName.RetryAfter, String(Math.max(1, d.retryAfterSeconds))]);
    for (const h of DENY_HEADERS) headers.push(h);
    headers.push([requestIdName, correlationId]);
    const body = rateLimitProblemBody({
      decision: d,
      path: req.path,
      correlationId,
      nowMs: wallClock(),
      typeOf,
    });
    const status = d.reason === 'store_unavailable' ? 503 : 429;
    return { action: 'deny', status, headers, body, decision: d, clientIp: ip };
  };

  const gate = (req: HttpRequestInfo, ip: string | undefined): MaybePromise<Verdict> | undefined => {
    if (authPolicy === undefined || req.operationRulesOnly === true || !hasCredentials(req)) return undefined;
    const key = boundKey(keyPrefix + ipKey(ip), maxKeyLength);
    const plan = authPlan as HeaderPlan;
    return whenReady(limiter.peek([{ policy: authPolicy, key }], 1), (d) =>
      d.allowed ? ALLOW_NO_HEADERS : verdictOf(req, plan, undefined, d, ip),
    );
  };

  const decideRules = (req: HttpRequestInfo, ip: string | undefined): MaybePromise<Verdict> => {
    const plan = match(req);
    if (plan === undefined) return EXEMPT;
    const checks = checksOf(req, plan, ip);
    const cost = req.cost ?? (typeof plan.cost === 'function' ? plan.cost(req) : plan.cost);
    const d = limiter.decide(checks, cost);
    // The memory store answers at once: no closure and no promise on that path.
    if (!isPromiseLike(d)) return verdictOf(req, plan.header, plan.legacyNames, d, ip);
    return d.then((r) => verdictOf(req, plan.header, plan.legacyNames, r, ip));
  };

  const isExempt = (req: HttpRequestInfo, ip: string | undefined): boolean => {
    if (exemptLoopback && ip !== undefined && inRanges(ip, LOOPBACK)) return true;
    return exemptWhen !== undefined && exemptWhen(req, ip) === true;
  };

  const evaluate = (req: HttpRequestInfo): MaybePromise<Verdict> => {
    for (let i = 0; i < exemptEndpoints.length; i++) {
      if (exemptEndpoints[i].match(req.method, req.path)) return EXEMPT;
    }
    const ip = clientIp(req.remoteAddress, req.headers);
    if (isExempt(req, ip)) return EXEMPT;
    const g = gate(req, ip);
    if (g === undefined) return decideRules(req, ip);
    return whenReady(g, (v) => (v.action === 'deny' ? v : decideRules(req, ip)));
  };

  return Object.freeze({
    limiter,
    headerMode: mode,
    clientIp,
    evaluate,
    checkCredentials(req: HttpRequestInfo): MaybePromise<Verdict> {
      return gate(req, clientIp(req.remoteAddress, req.headers)) ?? ALLOW_NO_HEADERS;
    },
    recordFailedCredentials(req: HttpRequestInfo, reason?: string): MaybePromise<Decision | undefined> {
      if (authPolicy === undefined) {
        throw new SluiceError(
          ErrorCode.InvalidOption,
          'recordFailedCredentials needs the publicAuth option (publicAuth.policy names the bucket to use up)',
          { option: 'publicAuth' },
        );
      }
      if (!countFailure(reason)) return undefined;
      const ip = clientIp(req.remoteAddress, req.headers);
      return limiter.decide([{ policy: authPolicy, key: boundKey(keyPrefix + ipKey(ip), maxKeyLength) }], 1);
    },
    keysOf(req: HttpRequestInfo): readonly Check[] {
      const plan = match(req);
      return plan === undefined ? [] : checksOf(req, plan, clientIp(req.remoteAddress, req.headers));
    },
  });
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
