import type { IncomingHttpHeaders } from 'node:http';
import { type Check, type Decision, type RateLimitStore, SluiceError } from 'sluice';
import { type HeaderPair, ipKey, isPromiseLike, rateLimitProblemBody } from 'sluice/http';
import type { PrometheusMetrics } from 'sluice/prometheus';
import type { IdentifyResult, PresentedCredentials } from '../identity/identify-request.js';
import { identityKey } from '../identity/identity.js';
import type { Route } from '../limits/route.js';
import type { Logger } from '../log/create-logger.js';
import type { TenantQuota } from '../quota/tenant-quota.js';
import type { ExemptReason } from './exemption-rules.js';
import { Problems, problemBody } from './problem-response.js';
import type { Runtime } from './runtime.js';

/** What admission needs of a running gateway (a `Gateway` is one); the decision API and Envoy use it too. */
export interface AdmissionHost {
  /** The configuration in effect, read per request so that a reload applies at once. */
  readonly runtime: Runtime;
  /** Every decision is recorded here. */
  readonly metrics: PrometheusMetrics;
  /** The gateway's store (its `kind` labels metrics). */
  readonly store: RateLimitStore;
  readonly logger: Logger;
  /** Tenant quota tracking, when configured: every admitted request of a tenant is recorded. */
  readonly quota?: TenantQuota | undefined;
}

/** One request to admit, from the gateway's own listener or as another proxy describes it. */
export interface AdmissionRequest {
  /** Upper-case method. */
  readonly method: string;
  /** The normalized path, without the query. */
  readonly path: string;
  /** The request's headers (credentials, identity headers). */
  readonly headers: IncomingHttpHeaders;
  /** The client's address from trusted proxies only, unmapped; `undefined` when unknown (`ip:unknown`). */
  readonly clientIp: string | undefined;
  /** Whether `identity.headers` are believed for this request (the direct peer is a trusted proxy). */
  readonly trustIdentityHeaders: boolean;
  /** Tokens the request costs, an integer >= 1. */
  readonly cost: number;
  /** The request id for problem bodies. */
  readonly correlationId: string;
  /** Wall-clock milliseconds for `X-RateLimit-Reset` and the problem's `reset`. */
  readonly nowMs: number;
  /**
   * The client's TLS socket, for the mTLS exemption; `undefined` when the connection is another proxy's (the
   * decision API, Envoy), where that exemption cannot apply.
   */
  readonly socket?: unknown;
}

/** The outcome of {@link admitRequest}; a denial is a value, never an exception. */
export type Admission =
  | {
      readonly kind: 'exempt';
      readonly reason: ExemptReason;
      readonly outcome: `exempt_${ExemptReason}`;
      readonly tier: string | undefined;
    }
  | {
      readonly kind: 'allow';
      /** `allowed`, or `store_unavailable_open` when the store failed and the failure mode is open. */
      readonly outcome: 'allowed' | 'store_unavailable_open';
      readonly headers: readonly HeaderPair[];
      readonly decision: Decision | undefined;
      readonly tier: string;
      readonly key: string;
    }
  | {
      readonly kind: 'deny';
      /** 401 invalid credentials, 429 limited, 503 store unavailable with failure mode closed. */
      readonly status: 401 | 429 | 503;
      readonly outcome: string;
      readonly headers: readonly HeaderPair[];
      /** The `application/problem+json` body. */
      readonly body: string;
      readonly decision: Decision | undefined;
      readonly tier: string | undefined;
      readonly key: string | undefined;
    };

const NO_HEADERS: readonly HeaderPair[] = Object.freeze([]);
const INVALID_TOKEN: readonly HeaderPair[] = Object.freeze([
  Object.freeze(['WWW-Authenticate', 'Bearer error="invalid_token"'] as HeaderPair),
]);
const RETRY_1: readonly HeaderPair[] = Object.freeze([Object.freeze(['Retry-After', '1'] as HeaderPair)]);
const EXEMPT = new Map<ExemptReason, Admission>();

/**
 * Admits one request: the single implementation behind the gateway's proxy path, its WebSocket upgrades, the
 * decision API (NGINX `auth_request`) so they cannot drift. Steps, in order: limiting disabled, exempt
 * endpoints, mTLS service clients (only with a `socket`), development loopback; then credentials (a client IP
 * whose public-auth bucket is empty is refused before any verification; a failed verification takes one token
 * from it); then the tier (unlimited is exempt) and the tier's and the matching endpoint rules' buckets, all or
 * nothing. Every decision is recorded in the metrics; an admitted request of a tenant is recorded for quotas.
 *
 * @param host - the running gateway.
 * @param r - the request.
 * @returns the admission, as a value when every step answered in the same tick (the memory store, no JWT) and
 *   as a promise otherwise; store errors follow `store.failureMode` and never throw.
 */
export function admitRequest(host: AdmissionHost, r: AdmissionRequest): Admission | Promise<Admission> {
  const rt = host.runtime;
  const c = rt.config;
  const { method, path, clientIp } = r;
  if (!c.enabled) return exempt(host, 'disabled', undefined);
  if (rt.exemptions.endpoint(method, path)) return exempt(host, 'endpoint', undefined);
  if (r.socket !== undefined && rt.exemptions.mtls(r.socket)) return exempt(host, 'mtls', undefined);
  if (rt.exemptions.development(clientIp)) return exempt(host, 'development', undefined);
  const presented = rt.identifier.credentials(r.headers);
  if (presented !== undefined) return admitWithCredentials(host, r, presented);
  // No credentials: identity comes from trusted headers or the client IP, in the same tick; with the memory
  // store the whole admission then completes without a promise.
  const result = rt.identifier.identify(r.headers, undefined, r.trustIdentityHeaders);
  return isPromiseLike(result)
    ? result.then((x) => afterIdentity(host, r, x, undefined))
    : afterIdentity(host, r, result, undefined);
}

async function admitWithCredentials(
  host: AdmissionHost,
  r: AdmissionRequest,
  presented: PresentedCredentials,
): Promise<Admission> {
  const plan = host.runtime.plan;
  const publicAuth: Check[] = [{ policy: plan.publicAuth, key: plan.bucketKey(ipKey(r.clientIp)) }];
  const peek = await plan.limiter.peek(publicAuth, 1);
  if (!peek.allowed)
    return denial(host.runtime, peek, r, undefined, ipKey(r.clientIp), 'public_auth_limited');
  const result = await host.runtime.identifier.identify(r.headers, presented, r.trustIdentityHeaders);
  return afterIdentity(host, r, result, publicAuth);
}

function afterIdentity(
  host: AdmissionHost,
  r: AdmissionRequest,
  result: IdentifyResult,
  publicAuth: Check[] | undefined,
): Admission | Promise<Admission> {
  const rt = host.runtime;
  const c = rt.config;
  const plan = rt.plan;
  const { method, path, clientIp } = r;
  if (!result.ok) {
    const p = Problems.invalidCredentials(
      result.source === 'jwt' ? 'The bearer token is not valid.' : 'The API key is not valid.',
    );
    const refused: Admission = {
      kind: 'deny',
      status: 401,
      outcome: `invalid_credentials_${result.reason}`,
      headers: result.source === 'jwt' ? INVALID_TOKEN : NO_HEADERS,
      body: problemBody(p, path, r.correlationId),
      decision: undefined,
      tier: undefined,
      key: ipKey(clientIp),
    };
    if (!result.counts || publicAuth === undefined) return refused;
    const counted = plan.limiter.decide(publicAuth, 1);
    const record = (d: Decision): Admission => {
      host.metrics.recordDecision(d, { store: host.store.kind });
      return refused;
    };
    return isPromiseLike(counted) ? counted.then(record) : record(counted);
  }
  const identity = result.identity;
  const tierName =
    identity.tier !== undefined && plan.tier(identity.tier) !== undefined ? identity.tier : c.defaultTier;
  const tier = plan.tier(tierName);
  if (tier === undefined || tier.unlimited) {
    if (identity.tenant !== undefined) recordQuota(host, rt, identity.tenant, tierName, r, undefined);
    return exempt(host, 'tier', tierName);
  }
  const key = identityKey(identity, clientIp);
  const route = plan.routeFor(tierName, method, path);
  const checks = route.checks(plan.bucketKey(key));
  const t0 = performance.now();
  let pending: Decision | Promise<Decision>;
  try {
    pending = plan.limiter.decide(checks, r.cost);
  } catch (e) {
    return storeFailed(host, r, e, tierName, key);
  }
  if (isPromiseLike<Decision>(pending)) {
    return pending.then(
      (d) => decided(host, r, route, identity.tenant, tierName, key, t0, d),
      (e: unknown) => storeFailed(host, r, e, tierName, key),
    );
  }
  return decided(host, r, route, identity.tenant, tierName, key, t0, pending);
}

/**
 * The store's answer turned into an admission, with its metrics and quota. A function of its own rather than a
 * closure, so the memory store's same-tick path allocates nothing for it.
 */
function decided(
  host: AdmissionHost,
  r: AdmissionRequest,
  route: Route,
  tenant: string | undefined,
  tierName: string,
  key: string,
  t0: number,
  decision: Decision,
): Admission {
  const rt = host.runtime;
  host.metrics.recordDecision(decision, route.labels(host.store.kind), (performance.now() - t0) / 1000);
  if (decision.allowed) {
    if (tenant !== undefined) recordQuota(host, rt, tenant, tierName, r, route.rules);
    return {
      kind: 'allow',
      outcome: 'allowed',
      headers: route.headers(decision, rt.config.headers.mode, r.nowMs),
      decision,
      tier: tierName,
      key,
    };
  }
  return denial(
    rt,
    decision,
    r,
    tierName,
    key,
    decision.reason === 'store_unavailable' ? 'store_unavailable' : 'limited',
  );
}

/** A store that threw: the failure mode decides (closed, or a non-Sluice error: 503; open: admit without headers). */
function storeFailed(
  host: AdmissionHost,
  r: AdmissionRequest,
  e: unknown,
  tierName: string,
  key: string,
): Admission {
  host.metrics.recordStoreError(host.store.kind);
  host.logger.error({ err: e }, 'rate-limit store failed');
  if (host.runtime.config.store.failureMode === 'closed' || !(e instanceof SluiceError)) {
    return {
      kind: 'deny',
      status: 503,
      outcome: 'store_unavailable',
      headers: RETRY_1,
      body: problemBody(Problems.storeUnavailable(), r.path, r.correlationId),
      decision: undefined,
      tier: tierName,
      key,
    };
  }
  return {
    kind: 'allow',
    outcome: 'store_unavailable_open',
    headers: NO_HEADERS,
    decision: undefined,
    tier: tierName,
    key,
  };
}

function recordQuota(
  host: AdmissionHost,
  rt: Runtime,
  tenant: string,
  tier: string,
  r: AdmissionRequest,
  rules: readonly string[] | undefined,
): void {
  const categories = rt.quotaCategories;
  if (host.quota === undefined || categories === undefined) return;
  const matched = rules ?? rt.plan.routeFor(tier, r.method, r.path).rules;
  host.quota.record(tenant, tier, categories.categoryOf(r.path, matched), r.cost);
}

function denial(
  rt: Runtime,
  decision: Decision,
  r: AdmissionRequest,
  tier: string | undefined,
  key: string,
  outcome: string,
): Admission {
  const nowMs = r.nowMs;
  return {
    kind: 'deny',
    status: decision.reason === 'store_unavailable' ? 503 : 429,
    outcome,
    headers: rt.plan.formatHeaders(decision, rt.config.headers.mode, nowMs),
    body: rateLimitProblemBody({
      decision,
      path: r.path,
      correlationId: r.correlationId,
      nowMs,
      typeOf: rt.problemType,
    }),
    decision,
    tier,
    key,
  };
}

function exempt(host: AdmissionHost, reason: ExemptReason, tier: string | undefined): Admission {
  host.metrics.recordExempt({ reason, tier });
  if (tier !== undefined) return { kind: 'exempt', reason, outcome: `exempt_${reason}`, tier };
  let a = EXEMPT.get(reason);
  if (a === undefined) {
    a = Object.freeze({ kind: 'exempt', reason, outcome: `exempt_${reason}`, tier: undefined } as const);
    EXEMPT.set(reason, a);
  }
  return a;
}
