import type { IncomingHttpHeaders } from 'node:http';
import type { Decision, RateLimitStore } from 'sluice';
import {
  type ClosableResponse,
  type HeaderPair,
  ipKey,
  isPromiseLike,
  type ResponseObserver,
  type Verdict,
} from 'sluice/http';
import type { DecisionLabels } from 'sluice/metrics';
import type { PrometheusMetrics } from 'sluice/prometheus';
import type { Logger } from '../log/create-logger.js';
import type { TenantQuota } from '../quota/tenant-quota.js';
import type { GatewayRequest } from './identify-caller.js';
import type { Penalties } from './penalties.js';
import { invalidIdentityHeader, repeatedIdentityHeader } from './repeated-identity-header.js';
import type { Runtime } from './runtime.js';

/** Why a request is exempt from limiting; a closed set, used as the metric label `reason`. */
export type ExemptReason = 'disabled' | 'endpoint' | 'mtls' | 'development' | 'tier' | 'override';

/** Every {@link ExemptReason}, for the metric label allow-list. */
export const EXEMPT_REASONS: readonly ExemptReason[] = Object.freeze([
  'disabled',
  'endpoint',
  'mtls',
  'development',
  'tier',
  'override',
]);

/** What admission needs of a running gateway (a `Gateway` is one); the decision API uses it too. */
export interface AdmissionHost {
  /** The configuration in effect, read per request so that a reload applies at once. */
  readonly runtime: Runtime;
  /**
   * Every decision is recorded here; requests refused by a run-time block too, where the sink counts them (the
   * gateway's `TappedMetrics`).
   */
  readonly metrics: PrometheusMetrics & {
    readonly recordBlocked?: (status: 403 | 429, tier: string | undefined) => void;
  };
  /** The gateway's store (its `kind` labels metrics). */
  readonly store: RateLimitStore;
  readonly logger: Logger;
  /** Tenant quota tracking, when configured: every admitted request of a tenant is recorded. */
  readonly quota?: TenantQuota | undefined;
  /** Automatic blocks (`penalty:`): every `rate_limited` denial is counted against its key. */
  readonly penalties?: Penalties | undefined;
}

/** One request to admit, from the gateway's own listener or as another proxy describes it. */
export interface AdmissionRequest {
  /** Upper-case method. */
  readonly method: string;
  /** The request target's path as sent (a query is ignored); it is made canonical before anything matches it. */
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
  /**
   * The client's TLS socket, for the mTLS exemption; `undefined` when the connection is another proxy's (the
   * decision API), where that exemption cannot apply.
   */
  readonly socket?: unknown;
  /**
   * Aborts when the client goes away: a request waiting in a queue then leaves it and its tokens return. Read
   * only when the request waits, so a getter may make it lazily.
   */
  readonly signal?: AbortSignal;
  /** The response whose early close (the client went away) ends a wait in a queue; read only for one that waits. */
  readonly response?: ClosableResponse;
  /** The request body, read before admission for a reservation that names one of its fields; else absent. */
  readonly bodyForReserve?: Uint8Array;
}

/** The outcome of {@link admitRequest}; a denial is a value, never an exception. */
export type Admission =
  | {
      readonly kind: 'exempt';
      readonly reason: ExemptReason;
      readonly outcome: `exempt_${ExemptReason}`;
      readonly tier: string | undefined;
      /** The key an `unlimited` override let through; `undefined` for the other reasons. */
      readonly key?: string | undefined;
      /**
       * Removes the upstream cost headers from the answer on a route whose rule names one (it holds nothing);
       * `undefined` on every other route. Whoever answers the request feeds and ends it, as an allowed one's.
       */
      readonly observer?: ResponseObserver | undefined;
    }
  | {
      readonly kind: 'allow';
      /** `allowed`, or `store_unavailable_open` when the store failed and the failure mode is open. */
      readonly outcome: 'allowed' | 'store_unavailable_open';
      readonly headers: readonly HeaderPair[];
      readonly decision: Decision | undefined;
      readonly tier: string;
      readonly key: string;
      /**
       * What the request holds until its response ends (a concurrency slot, a cost settled from the response);
       * whoever answers the request ends it exactly once. `undefined` when its rules hold nothing.
       */
      readonly observer: ResponseObserver | undefined;
      /** The names of the rules it matched (one frozen list per combination), for its load-shedding priority. */
      readonly rules: readonly string[] | undefined;
    }
  | {
      readonly kind: 'deny';
      /**
       * 400 refused target or identity (a header or a token's claim), 401 invalid credentials, 429 limited, 503
       * store unavailable.
       */
      readonly status: 400 | 401 | 403 | 429 | 503;
      readonly outcome: string;
      /** The rate-limit and problem headers (content type, cache control, nosniff, request id). */
      readonly headers: readonly HeaderPair[];
      /** The `application/problem+json` body. */
      readonly body: string;
      readonly decision: Decision | undefined;
      readonly tier: string | undefined;
      readonly key: string | undefined;
    };

const EXEMPT = new Map<ExemptReason, Admission>();
/** Library exempt reasons under the gateway's metric labels. */
const REASONS: Readonly<Record<string, ExemptReason>> = Object.freeze({
  endpoint: 'endpoint',
  mtls: 'mtls',
  loopback: 'development',
  tier: 'tier',
  // An `unlimited` run-time override: counted apart, so an operator sees who used it.
  override: 'override',
  // A limited tier always has a rule; a caller whose tier has none is as exempt as an unlimited one.
  no_rule: 'tier',
});
const labelCache = new WeakMap<readonly string[], DecisionLabels>();

/**
 * Admits one request through `sluice/http`, the one admission path of the gateway's proxy, its WebSocket
 * upgrades and the decision API (NGINX `auth_request`): the canonical request target, exempt endpoints, mTLS
 * service clients (only with a `socket`), development loopback, the failed-credentials gate, identity, the
 * tier (unlimited is exempt), then the tier's and the matching endpoint rules' buckets, all or nothing. The
 * gateway adds what only it has: limiting switched off, metrics for every decision, and quota records for
 * admitted tenants.
 *
 * @param host - the running gateway.
 * @param r - the request.
 * @returns the admission, as a value when every step answered in the same tick (the memory store, no JWT) and
 *   as a promise otherwise; store errors answer 503 and never throw.
 */
export function admitRequest(host: AdmissionHost, r: AdmissionRequest): Admission | Promise<Admission> {
  return admitOwn(host, AdmittedRequest.of(r));
}

/**
 * {@link admitRequest} of a request already in the library's shape: the gateway's own listener builds that one
 * object per request, instead of a description and then this copy of it.
 *
 * @param host - the running gateway.
 * @param r - the request, as {@link AdmittedRequest.of} or the listener makes it.
 * @returns as {@link admitRequest}.
 */
export function admitOwn(host: AdmissionHost, r: AdmittedRequest): Admission | Promise<Admission> {
  const rt = host.runtime;
  // Switched off, nothing is limited; a target that cannot be matched safely is still refused (the evaluation
  // below refuses it first thing), since the gateway would forward it.
  if (!rt.config.enabled) {
    const target = rt.http.canonicalTarget(r.path);
    if (target.ok)
      return exempt(
        host,
        'disabled',
        undefined,
        undefined,
        rt.costHeaders?.observerFor(r.method, target.path),
      );
  }
  // A trusted proxy's identity header with two values, a control character or more than 256 characters names
  // no one caller: refused before anything is keyed.
  if (r.trustIdentityHeaders) {
    const repeated = rt.identifier.repeatedHeader(r.headers);
    if (repeated !== undefined)
      return repeatedIdentityHeader(repeated, r.path, rt.config.server.requestIdHeader, r.correlationId);
    const invalid = rt.identifier.invalidHeader(r.headers);
    if (invalid !== undefined)
      return invalidIdentityHeader(invalid, r.path, rt.config.server.requestIdHeader, r.correlationId);
  }
  const t0 = performance.now();
  const v = rt.http.evaluate(r);
  return isPromiseLike(v) ? v.then((x) => admitted(host, rt, r, x, t0)) : admitted(host, rt, r, v, t0);
}

/** A verdict as an admission, with its metrics and quota record. A module function, so no closure per request. */
function admitted(host: AdmissionHost, rt: Runtime, req: GatewayRequest, v: Verdict, t0: number): Admission {
  const tier = v.identity?.tier;
  if (v.action === 'exempt') {
    const reason = REASONS[v.exemptReason ?? 'endpoint'] ?? 'endpoint';
    if (reason === 'tier' && v.identity?.tenant !== undefined) recordQuota(host, rt, v, req);
    return exempt(host, reason, tier, v.key, costHeaderRemover(rt, req));
  }
  const d = v.decision;
  if (d !== undefined)
    host.metrics.recordDecision(d, labels(v, host.store.kind), (performance.now() - t0) / 1000);
  else if (v.outcome === 'store_unavailable') {
    host.metrics.recordStoreError(host.store.kind);
    // The store threw instead of deciding (a closed store, not an outage its own failure mode answered): the
    // configured failure mode decides here too, so `open` admits. `local` answers 503 like `closed`: its local
    // buckets closed with the store (or refused the policy), and new ones would start full (D-G225).
    const store = rt.config.store;
    if (store.type === 'redis' && store.failureMode === 'open') {
      if (v.identity?.tenant !== undefined) recordQuota(host, rt, v, req);
      return storeThrewOpen(v, rt);
    }
  }
  const key = v.key ?? '';
  if (v.action === 'allow') {
    if (v.identity?.tenant !== undefined) recordQuota(host, rt, v, req);
    return {
      kind: 'allow',
      outcome: v.outcome === 'store_unavailable_open' ? 'store_unavailable_open' : 'allowed',
      headers: v.headers,
      decision: d,
      tier: tier ?? rt.config.defaultTier,
      key,
      observer: v.observer,
      rules: v.rules,
    };
  }
  if (v.outcome === 'limited') host.penalties?.limited(key);
  else if (v.outcome === 'blocked') host.metrics.recordBlocked?.(v.status as 403 | 429, tier);
  return {
    kind: 'deny',
    status: v.status as 400 | 401 | 403 | 429 | 503,
    outcome: v.outcome,
    headers: v.headers,
    body: v.body as string,
    decision: d,
    tier,
    // A token's identity claim that names no caller keys nothing, as such an identity header does not.
    key: v.key ?? (IDENTITY_REFUSALS.has(v.outcome) ? undefined : ipKey(v.clientIp ?? req.clientIp)),
  };
}

/** Outcomes of a verified token refused for an identity claim (identify-caller.ts): no key was made. */
const IDENTITY_REFUSALS: ReadonlySet<string> = new Set([
  'invalid_identity_header',
  'duplicate_identity_header',
]);

/** A store that threw, under the `open` failure mode: admitted, with no rate-limit header (nothing was decided). */
function storeThrewOpen(v: Verdict, rt: Runtime): Admission {
  return {
    kind: 'allow',
    outcome: 'store_unavailable_open',
    headers: [],
    decision: undefined,
    tier: v.identity?.tier ?? rt.config.defaultTier,
    key: v.key ?? '',
    observer: undefined,
    rules: v.rules,
  };
}

/** Metric labels of a verdict: its tier, its first endpoint rule, the store; one frozen object per rule set. */
function labels(v: Verdict, store: string): DecisionLabels {
  const rules = v.rules ?? [];
  const known = labelCache.get(rules);
  const tier = v.identity?.tier ?? '';
  if (known !== undefined && known.store === store && known.tier === tier) return known;
  // Rules are in configuration order: the tier's rule first, then the endpoint rules that matched.
  const first = rules.length > 1 ? rules[1] : '';
  const l = Object.freeze({ tier, rule: first, store });
  if (rules.length > 0) labelCache.set(rules, l);
  return l;
}

function recordQuota(host: AdmissionHost, rt: Runtime, v: Verdict, req: GatewayRequest): void {
  const categories = rt.quotaCategories;
  const tenant = v.identity?.tenant;
  if (host.quota === undefined || categories === undefined || typeof tenant !== 'string') return;
  const path = rt.http.canonicalTarget(req.path);
  const category = categories.categoryOf(path.ok ? path.path : req.path, v.rules ?? []);
  host.quota.record(tenant, v.identity?.tier ?? rt.config.defaultTier, category, req.cost ?? 1);
}

/**
 * What removes the upstream cost headers from an exempt request's answer on a route whose rule names one (a
 * limited request's settlement removes them); `undefined` on every other route.
 */
function costHeaderRemover(rt: Runtime, req: GatewayRequest): ResponseObserver | undefined {
  const scope = rt.costHeaders;
  if (scope === undefined) return undefined;
  const target = rt.http.canonicalTarget(req.path);
  return target.ok ? scope.observerFor(req.method, target.path) : undefined;
}

function exempt(
  host: AdmissionHost,
  reason: ExemptReason,
  tier: string | undefined,
  key?: string,
  observer?: ResponseObserver,
): Admission {
  host.metrics.recordExempt({ reason, tier });
  if (tier !== undefined || key !== undefined || observer !== undefined)
    return { kind: 'exempt', reason, outcome: `exempt_${reason}`, tier, key, observer };
  let a = EXEMPT.get(reason);
  if (a === undefined) {
    a = Object.freeze({ kind: 'exempt', reason, outcome: `exempt_${reason}`, tier: undefined } as const);
    EXEMPT.set(reason, a);
  }
  return a;
}

/**
 * The library's view of an admission request, with one shape for every request (an object literal with a getter
 * would make every request object slow); the client's disconnect is read only for a request that waits.
 */
export class AdmittedRequest implements GatewayRequest {
  readonly method: string;
  readonly path: string;
  readonly headers: IncomingHttpHeaders;
  readonly remoteAddress: undefined = undefined;
  readonly clientIp: string | undefined;
  readonly trustIdentityHeaders: boolean;
  readonly cost: number;
  readonly correlationId: string;
  readonly socket: unknown;
  readonly signal: AbortSignal | undefined;
  readonly disconnect: ClosableResponse | undefined;
  readonly bodyForReserve: Uint8Array | undefined;

  /** The fields of {@link AdmissionRequest}, in its order (`disconnect` is its `response`). */
  constructor(
    method: string,
    path: string,
    headers: IncomingHttpHeaders,
    clientIp: string | undefined,
    trustIdentityHeaders: boolean,
    cost: number,
    correlationId: string,
    socket: unknown,
    signal: AbortSignal | undefined,
    disconnect: ClosableResponse | undefined,
    bodyForReserve: Uint8Array | undefined,
  ) {
    this.method = method;
    this.path = path;
    this.headers = headers;
    this.clientIp = clientIp;
    this.trustIdentityHeaders = trustIdentityHeaders;
    this.cost = cost;
    this.correlationId = correlationId;
    this.socket = socket;
    this.signal = signal;
    this.disconnect = disconnect;
    this.bodyForReserve = bodyForReserve;
  }

  /**
   * The library's view of a described request.
   *
   * @param r - the request as {@link admitRequest} takes it.
   * @returns its one object.
   */
  static of(r: AdmissionRequest): AdmittedRequest {
    return new AdmittedRequest(
      r.method,
      r.path,
      r.headers,
      r.clientIp,
      r.trustIdentityHeaders,
      r.cost,
      r.correlationId,
      r.socket,
      r.signal,
      r.response,
      r.bodyForReserve,
    );
  }
}
