import {
  type Check,
  type Decision,
  ErrorCode,
  type Limiter,
  ManyDecision,
  type MaybePromise,
  type Policy,
  SluiceError,
} from '../core/index.js';
import { OverrideApplier } from './apply-overrides.js';
import type { ClientIpResolver } from './client-ip.js';
import { hasSlots, holding, waitThenSlots } from './concurrency-hold.js';
import { ExemptBlocks } from './exempt-blocks.js';
import type { HeaderMode } from './header-mode.js';
import { ALLOW_NO_HEADERS, isLoopback, mayWait, signalOf, tierOf } from './http-limiter-helpers.js';
import {
  type CredentialFailure,
  type HttpLimiterOptions,
  type IdentifyResult,
  resolveHttpLimiterOptions,
} from './http-limiter-options.js';
import { recordingEvaluate } from './http-metrics.js';
import { requestIpKey } from './keys.js';
import { isPromiseLike, whenReady } from './maybe-promise.js';
import { HeaderPlan } from './rate-limit-headers.js';
import type { CanonicalTarget } from './request-target.js';
import { composeObservers } from './response-observer.js';
import { type RulePlan, RulePlans } from './rule-plans.js';
import type { SettlePlan } from './settle-plan.js';
import type { HttpRequestInfo, Identity, Verdict } from './types.js';
import { type DecidedFacts, VerdictWriter } from './verdicts.js';

const NO_NAMES: readonly string[] = Object.freeze([]);

/**
 * HTTP semantics over the engine: the request target, exemptions, client IP, credentials, rules, keys, headers
 * and problem responses, framework neutral. The adapters (`sluice/node`, `sluice/express`, `sluice/fastify`,
 * `sluice/hono`), the gateway's proxy, its WebSocket upgrades and its decision API all call
 * {@link HttpLimiter.evaluate} once per request and apply the {@link Verdict}: one admission path.
 */
export interface HttpLimiter<R extends HttpRequestInfo = HttpRequestInfo> {
  /** The engine limiter. */
  readonly limiter: Limiter;
  /** The header mode in force. */
  readonly headerMode: HeaderMode;
  /** The resolved client IP of a request (trusted proxies applied, IPv4-mapped unmapped). */
  readonly clientIp: ClientIpResolver;
  /**
   * The canonical form of a request target (`/a/./b%2Dc?x` to path `/a/b-c` and query `?x`), or why it is
   * refused; what {@link HttpLimiter.evaluate} matches and what a proxy must forward.
   */
  canonicalTarget(target: string): CanonicalTarget;
  /**
   * Decides a request, in order: the canonical request target (a fragment or an encoded slash is refused with
   * 400), exempt endpoints, the client IP, exempt clients, the failed-credentials gate (a client IP whose
   * public-auth bucket is empty is refused before its credentials are verified), `identify` (refused credentials
   * answer 401 and take a public-auth token), exempt tiers, then every matching rule's policies at once, all or
   * nothing. Synchronous with the memory store and a synchronous `identify`, a promise otherwise.
   *
   * @returns the verdict; a denial is a verdict, never a throw. A store that throws gives a 503 verdict.
   * @throws SluiceError `ERR_INVALID_COST` for an invalid `cost`.
   */
  evaluate(request: R): MaybePromise<Verdict>;
  /**
   * The failed-credentials gate alone: a 429 verdict when the request presents credentials and its client IP's
   * public-auth bucket is empty (so the credentials need not be verified), else an allow verdict without headers.
   * {@link HttpLimiter.evaluate} already runs it; call it directly where authentication runs elsewhere.
   */
  checkCredentials(request: R): MaybePromise<Verdict>;
  /**
   * Counts a failed authentication against the public-auth bucket of the request's client IP, unless
   * `countFailure(reason)` excludes it (an expired token by default).
   *
   * @param request - the request whose credentials failed.
   * @param reason - the failure reason, for example `invalid_token` or `token_expired`.
   * @returns the decision of the public-auth bucket, or `undefined` when the failure does not count.
   * @throws SluiceError `ERR_INVALID_OPTION` when `publicAuth` was not configured.
   */
  recordFailedCredentials(request: R, reason?: string): MaybePromise<Decision | undefined>;
  /** The bucket keys a request would use, one per policy, for debugging and admin tools. */
  keysOf(request: R): readonly Check[];
  /**
   * Gives back a verdict of {@link HttpLimiter.evaluate} read for the last time, its decision too (a log replay):
   * later ones are written into it and its checks (D-G194). One with an observer is kept; never read it again.
   */
  recycle(verdict: Verdict): void;
}

/**
 * Builds the framework-neutral HTTP limiter.
 *
 * Decisions over the rules' policies go to `limiter.store` directly (the policies were checked against the
 * limiter when the rules were compiled), so a wrapper around `Limiter.decide` does not see them; observe the
 * store, or the verdicts, instead.
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
export function createHttpLimiter<R extends HttpRequestInfo = HttpRequestInfo>(
  options: HttpLimiterOptions<R>,
): HttpLimiter<R> {
  const o = resolveHttpLimiterOptions<R>(options);
  const { limiter, authPolicy, canonical } = o;
  const plans = new RulePlans(o.rules, o.keyPrefix, o.maxKeyLength, o.exemptEndpoints);
  const writer = new VerdictWriter(o as never);
  const authFacts: DecidedFacts | undefined =
    authPolicy === undefined
      ? undefined
      : {
          header: new HeaderPlan([authPolicy]),
          legacyNames: undefined,
          names: NO_NAMES,
          denied: 'public_auth_limited',
        };
  const overrides = o.overrides === undefined ? undefined : new OverrideApplier(o.overrides, o.keyPrefix);
  const exemptions = new ExemptBlocks(o.exemptTiers, overrides, plans, writer, o.wallClock);
  const authKey = (req: R, ip: string | undefined) => plans.bucketKey(requestIpKey(req, ip));
  const clientIpOf = (req: R): string | undefined =>
    req.clientIp ?? o.clientIp(req.remoteAddress, req.headers);

  // Closures sit in helpers: a function whose variables a closure captures allocates a context per call (D-G141).
  const gate = (req: R, ip: string | undefined): MaybePromise<Verdict> | undefined => {
    if (authPolicy === undefined || req.operationRulesOnly === true || !o.hasCredentials(req))
      return undefined;
    return gateOn(req, ip, authPolicy);
  };
  const gateOn = (req: R, ip: string | undefined, policy: Policy): MaybePromise<Verdict> =>
    whenReady(limiter.peek([{ policy, key: authKey(req, ip) }], 1), (d) =>
      d.allowed
        ? ALLOW_NO_HEADERS
        : writer.decided(req, authFacts as DecidedFacts, undefined, undefined, d, ip),
    );

  const refuseCredentials = (req: R, failure: CredentialFailure, ip: string | undefined) => {
    if (authPolicy === undefined || !(failure.counts ?? o.countFailure(failure.reason))) {
      return writer.invalidCredentials(req, failure, undefined, ip);
    }
    return whenReady(limiter.decide([{ policy: authPolicy, key: authKey(req, ip) }], 1), (d) =>
      writer.invalidCredentials(req, failure, d, ip),
    );
  };

  // The identity travels beside the request (from `identify`, else the request's own), so no copy of the request
  // is made per decision.
  const decideRules = (req: R, ip: string | undefined, identity = req.identity): MaybePromise<Verdict> => {
    const exemptTier = exemptions.ofTier(req, ip, identity);
    if (exemptTier !== undefined) return exemptTier;
    let plan = plans.match(req, identity);
    if (plan === undefined) return writer.exempt('no_rule', identity);
    let checks = plans.checks(req, plan, ip, identity);
    const key = plans.unprefixed(checks[0].key);
    const cost = req.cost ?? (typeof plan.cost === 'function' ? plan.cost(req) : plan.cost);
    const index = overrides?.current();
    if (index !== undefined) {
      const r = (overrides as OverrideApplier).apply(
        index,
        plan,
        checks,
        tierOf(identity),
        ip,
        o.wallClock,
        plans.unhashedKeys(),
        identity?.tenant,
      );
      if (r !== undefined) {
        if (r.kind === 'block') return writer.blocked(req, r.entry.rule, key, identity, ip, o.wallClock());
        if (r.checks.length === 0) return writer.exempt('override', identity, key);
        plan = r.plan;
        checks = r.checks;
      }
    }
    let d: MaybePromise<Decision>;
    try {
      // The rules' policies are the limiter's own (checked when the rules were compiled) and override policies
      // are derived from them: with a valid cost the store decides directly, without the limiter's per-decision
      // ownership test. An invalid cost goes through the limiter, which refuses it.
      d =
        Number.isSafeInteger(cost) && cost >= 1
          ? limiter.store.decide(checks, cost)
          : limiter.decide(checks, cost);
    } catch (e) {
      if (e instanceof SluiceError && e.code === ErrorCode.InvalidCost) throw e;
      return storeFailed(req, ip, plan, key, e);
    }
    // The memory store answers at once: no closure and no promise on that path.
    if (!isPromiseLike(d)) {
      const v =
        plan.queue !== undefined && mayWait(d)
          ? waitInQueue(req, ip, plan, checks, key, identity, cost)
          : plan.settle !== undefined && d.reason !== 'store_unavailable'
            ? settling(req, ip, plan, checks, key, identity, cost, d)
            : writer.decided(req, plan, key, identity, d, ip);
      return hasSlots(checks) ? holding(v, limiter.store, checks, cost, o.onStoreError) : v;
    }
    return decidedLater(d, req, ip, plan, checks, key, identity, cost);
  };
  /** The verdict of a decision that a store answers later (a promise), as `decideRules` gives one at once. */
  const decidedLater = (
    d: Promise<Decision>,
    req: R,
    ip: string | undefined,
    plan: RulePlan,
    checks: readonly Check[],
    key: string,
    identity: Identity | undefined,
    cost: number,
  ): Promise<Verdict> =>
    d.then(
      (r) => {
        const v =
          plan.queue !== undefined && mayWait(r)
            ? waitInQueue(req, ip, plan, checks, key, identity, cost)
            : plan.settle !== undefined && r.reason !== 'store_unavailable'
              ? settling(req, ip, plan, checks, key, identity, cost, r)
              : writer.decided(req, plan, key, identity, r, ip);
        return hasSlots(checks) ? holding(v, limiter.store, checks, cost, o.onStoreError) : v;
      },
      (e: unknown) => storeFailed(req, ip, plan, key, e),
    );

  /**
   * An admission over a plan whose rules settle a cost from the response or count only some responses: their
   * reservations are taken (a request they cannot cover is refused up front) and the verdict carries the
   * observer that settles the difference when the response ends. A denial waits for the reservation too.
   */
  const settling = (
    req: R,
    ip: string | undefined,
    plan: RulePlan,
    checks: readonly Check[],
    key: string,
    identity: Identity | undefined,
    cost: number,
    d: Decision,
  ): MaybePromise<Verdict> => {
    const sp = plan.settle as SettlePlan;
    const store = limiter.store;
    if (!d.allowed) {
      return whenReady(sp.refused(store, req, checks, cost, d), (r) =>
        writer.decided(req, plan, key, identity, r, ip),
      );
    }
    return whenReady(sp.admit(store, req, checks, cost, d), (a): Verdict => {
      const v = writer.decided(req, plan, key, identity, a.decision, ip);
      if (!a.decision.allowed) return v;
      const mine = sp.observer(store, checks, a.admitted, o.settleMetrics, o.onStoreError);
      return { ...v, observer: composeObservers(v.observer, mine) };
    });
  };

  // Requests waiting now, per queueing policy: the queue length metric.
  const waiting = new Map<Policy, number>();
  const queueMetrics = o.queueMetrics;
  const queued = (q: Policy, delta: number) => {
    const n = (waiting.get(q) ?? 0) + delta;
    waiting.set(q, n);
    queueMetrics?.setQueueLength?.(q.name, n);
  };

  /**
   * A denial over a plan with a queueing policy: wait for the tokens within the policy's queue bounds (the
   * engine refuses at once beyond them) until they come due or the client goes away. The engine gives every
   * waiting request its own place in the bucket's debt, so requests are admitted in arrival order.
   */
  const waitInQueue = async (
    req: R,
    ip: string | undefined,
    plan: RulePlan,
    checks: readonly Check[],
    key: string,
    identity: Identity | undefined,
    cost: number,
  ): Promise<Verdict> => {
    const q = plan.queue as Policy;
    const start = o.wallClock();
    queued(q, 1);
    try {
      const d = await waitThenSlots(limiter, checks, cost, req.signal ?? signalOf(req.disconnect));
      if (d.allowed) queueMetrics?.recordQueueWait?.(q.name, d.delayMs / 1000, 'admitted');
      // A request that waited settles its cost like any other.
      if (plan.settle !== undefined && d.allowed) {
        return await settling(req, ip, plan, checks, key, identity, cost, d);
      }
      return writer.decided(req, plan, key, identity, d, ip);
    } catch (e) {
      if (!(e instanceof SluiceError && e.code === ErrorCode.Aborted))
        return storeFailed(req, ip, plan, key, e);
      queueMetrics?.recordQueueWait?.(q.name, Math.max(0, o.wallClock() - start) / 1000, 'abandoned');
      return writer.abandoned(req, plan.names, key, identity, ip);
    } finally {
      queued(q, -1);
    }
  };

  const storeFailed = (req: R, ip: string | undefined, plan: RulePlan, key: string, e: unknown): Verdict => {
    o.onStoreError?.(e);
    return writer.storeFailed(req, ip, plan.names, key);
  };

  const afterIdentity = (req: R, ip: string | undefined, result: IdentifyResult): MaybePromise<Verdict> => {
    if (result !== undefined && (result as CredentialFailure).failed === true) {
      return refuseCredentials(req, result as CredentialFailure, ip);
    }
    return decideRules(req, ip, result === undefined ? req.identity : (result as Identity));
  };

  const afterGate = (req: R, ip: string | undefined): MaybePromise<Verdict> => {
    if (o.identify === undefined) return decideRules(req, ip);
    const result = o.identify(req, ip);
    return isPromiseLike(result)
      ? identifiedLater(result, req, ip)
      : afterIdentity(req, ip, result as IdentifyResult);
  };
  const identifiedLater = (result: Promise<IdentifyResult>, req: R, ip: string | undefined) =>
    result.then((r) => afterIdentity(req, ip, r));

  const exemptReason = (req: R, ip: string | undefined): string | undefined => {
    if (o.exemptLoopback && ip !== undefined && isLoopback(ip)) return 'loopback';
    if (o.exemptWhen === undefined) return undefined;
    const r = o.exemptWhen(req, ip);
    return r === true ? 'client' : typeof r === 'string' && r !== '' ? r : undefined;
  };

  const evaluate = (request: R): MaybePromise<Verdict> => {
    const path = canonical.path(request.path);
    if (typeof path !== 'string') return writer.badTarget(request, path);
    // A canonical target is the request as given: no copy on the common path.
    const req = path === request.path ? request : { ...request, path };
    const exempt = o.exemptEndpoints;
    if (exempt.length > 0) {
      // The path is cut once for the exemptions and the rules.
      const cut = plans.cut(req.path);
      for (let i = 0; i < exempt.length; i++) {
        if (plans.mayMatchAlso(i, cut) && exempt[i].matchSegments(req.method, cut))
          return exemptions.exempt('endpoint', req, clientIpOf(req));
      }
    }
    const ip = clientIpOf(req);
    const reason = exemptReason(req, ip);
    if (reason !== undefined) return writer.exempt(reason);
    const g = gate(req, ip);
    if (g === undefined) return afterGate(req, ip);
    return afterGateOf(g, req, ip);
  };
  const afterGateOf = (g: MaybePromise<Verdict>, req: R, ip: string | undefined) =>
    whenReady(g, (v) => (v.action === 'deny' ? v : afterGate(req, ip)));

  return Object.freeze({
    limiter,
    headerMode: o.mode,
    clientIp: o.clientIp,
    canonicalTarget: canonical,
    evaluate: o.metrics === undefined ? evaluate : recordingEvaluate(evaluate, o.metrics, limiter.store.kind),
    checkCredentials(req: R): MaybePromise<Verdict> {
      return gate(req, clientIpOf(req)) ?? ALLOW_NO_HEADERS;
    },
    recordFailedCredentials(req: R, reason?: string): MaybePromise<Decision | undefined> {
      if (authPolicy === undefined) {
        throw new SluiceError(
          ErrorCode.InvalidOption,
          'recordFailedCredentials needs the publicAuth option (publicAuth.policy names the bucket to use up)',
          { option: 'publicAuth' },
        );
      }
      if (!o.countFailure(reason)) return undefined;
      return limiter.decide([{ policy: authPolicy, key: authKey(req, clientIpOf(req)) }], 1);
    },
    keysOf(req: R): readonly Check[] {
      const plan = plans.match(req);
      return plan === undefined ? [] : plans.checks(req, plan, clientIpOf(req));
    },
    recycle(v: Verdict): void {
      const d = v.decision;
      if (d === undefined || v.observer !== undefined) return;
      if (d instanceof ManyDecision && v.rules !== undefined) plans.recycle(d.checks);
      writer.recycle(v);
    },
  });
}
