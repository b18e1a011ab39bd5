import { type Decision, type OverrideRule, type Policy, SingleDecision } from '../core/index.js';
import { correlationIdOf } from './correlation-id.js';
import { ExemptVerdicts } from './exempt-verdicts.js';
import type { CredentialFailure, ResolvedHttpLimiterOptions } from './http-limiter-options.js';
import { type HttpProblem, httpProblemBody } from './http-problem.js';
import { partitionKeyOf } from './key-hash.js';
import { PROBLEM_CONTENT_TYPE, ProblemCode, rateLimitProblemBodyOf } from './problem.js';
import {
  formatRateLimit,
  formatRateLimitPolicy,
  HeaderName,
  type HeaderPlan,
  mostRestrictive,
  resetEpochSeconds,
} from './rate-limit-headers.js';
import type { TargetRefusal } from './request-target.js';
import { retryAfterPair } from './retry-after-pair.js';
import type { HeaderPair, HttpRequestInfo, Identity, Verdict } from './types.js';

const EMPTY: readonly HeaderPair[] = Object.freeze([]);
/** The most admissions kept for reuse (a replay's batch holds 32 at a time). */
const MAX_FREE = 64;
type WritableVerdict = { -readonly [K in keyof Verdict]: Verdict[K] };
const NO_NAMES: readonly string[] = Object.freeze([]);
const DENY_HEADERS: readonly HeaderPair[] = Object.freeze([
  Object.freeze([HeaderName.ContentType, PROBLEM_CONTENT_TYPE] as const),
  Object.freeze([HeaderName.CacheControl, 'no-store'] as const),
  Object.freeze([HeaderName.ContentTypeOptions, 'nosniff'] as const),
]);
const RETRY_1 = retryAfterPair(1);

/** What a decided request's verdict says besides the decision. */
export interface DecidedFacts {
  readonly header: HeaderPlan;
  readonly legacyNames: ReadonlyMap<Policy, string> | undefined;
  /** The matching rules' names. */
  readonly names: readonly string[];
  /** The outcome of a denial (`limited` or `public_auth_limited`). */
  readonly denied: string;
  /** The 429 problem `code` per policy where a rule sets its own. */
  readonly problemCodes?: ReadonlyMap<Policy, string> | undefined;
}

/**
 * Turns decisions and refusals into verdicts: the rate-limit headers in the configured mode, the problem headers
 * and bodies of denials, and the frozen exempt verdicts. One per limiter; holds only resolved options.
 */
export class VerdictWriter {
  readonly #o: ResolvedHttpLimiterOptions<HttpRequestInfo>;
  readonly #draft: boolean;
  readonly #legacy: boolean;
  readonly #exempt = new ExemptVerdicts();
  /** Admissions without headers given back by {@link VerdictWriter.recycle}, written over by the next ones. */
  readonly #free: WritableVerdict[] = [];

  /** @param options - the limiter's resolved options. */
  constructor(options: ResolvedHttpLimiterOptions<HttpRequestInfo>) {
    this.#o = options;
    this.#draft = options.mode === 'draft-11' || options.mode === 'both';
    this.#legacy = options.mode === 'legacy' || options.mode === 'both';
  }

  /**
   * The exempt verdict of a reason, frozen and shared, unless it must carry the identity or the key (an
   * `unlimited` override names the key it let through, for the logs).
   */
  exempt(reason: string, identity?: Identity, key?: string): Verdict {
    return this.#exempt.of(reason, identity, key);
  }

  /** The verdict of a decision over a plan (or the public-auth bucket). */
  decided(
    req: HttpRequestInfo,
    facts: DecidedFacts,
    key: string | undefined,
    identity: Identity | undefined,
    d: Decision,
    ip: string | undefined,
  ): Verdict {
    const none = this.#o.mode === 'none';
    const rules = facts.names;
    if (d.allowed) {
      const outcome = d.reason === 'store_unavailable_open' ? 'store_unavailable_open' : 'allowed';
      if (none && this.#free.length > 0) {
        // An admission given back (D-G194): its fields are the literal's below, in its order.
        const v = this.#free.pop() as WritableVerdict;
        v.outcome = outcome;
        v.decision = d;
        v.clientIp = ip;
        v.rules = rules;
        v.key = key;
        v.identity = identity;
        return v;
      }
      return {
        action: 'allow',
        status: 200,
        outcome,
        // Without rate-limit headers an admission carries none: one shared empty list, nothing allocated.
        headers: none ? EMPTY : this.#rateLimitHeaders(facts, d),
        decision: d,
        clientIp: ip,
        rules,
        key,
        identity,
      };
    }
    const unavailable = d.reason === 'store_unavailable';
    let headers: HeaderPair[];
    // Without denial bodies (verdicts read, never sent: a replay of logs) the body and the headers that describe
    // it are left out.
    let body: string | undefined;
    if (this.#o.denialBodies) {
      const correlationId = this.correlationId(req);
      headers = this.#denialHeaders(facts, d, correlationId);
      // An id of correlationIdOf (no id set on the request) needs no escaping: the body quotes it as it is.
      body = rateLimitProblemBodyOf(
        {
          decision: d,
          path: req.path,
          correlationId,
          nowMs: this.#o.wallClock(),
          typeOf: this.#o.typeOf,
          code: facts.problemCodes === undefined ? undefined : problemCodeOf(facts.problemCodes, d),
        },
        req.correlationId === undefined,
      );
    } else {
      headers = none ? [] : this.#rateLimitHeaders(facts, d);
      if (d.reason !== 'cost_exceeds_burst') headers.push(retryAfterPair(d.retryAfterSeconds));
    }
    return {
      action: 'deny',
      status: unavailable ? 503 : 429,
      outcome: unavailable ? 'store_unavailable' : facts.denied,
      headers,
      body,
      decision: d,
      clientIp: ip,
      rules,
      key,
      identity,
    };
  }

  /**
   * Takes back an admission {@link VerdictWriter.decided} made without headers, read for the last time: the next
   * one is written into it. Any other verdict (a denial, one with headers or an observer, a frozen one) is left.
   */
  recycle(v: Verdict): void {
    if (v.action !== 'allow' || v.headers !== EMPTY || v.decision === undefined || v.observer !== undefined)
      return;
    if (this.#free.length < MAX_FREE && !Object.isFrozen(v)) this.#free.push(v as WritableVerdict);
  }

  /**
   * A request whose client went away (its `signal` aborted) while it waited in a queue: its tokens are back and
   * nobody reads the answer, but the adapter still gets a verdict that never calls the handler.
   */
  abandoned(
    req: HttpRequestInfo,
    rules: readonly string[],
    key: string,
    identity: Identity | undefined,
    ip: string | undefined,
  ): Verdict {
    const p: HttpProblem = {
      status: 429,
      title: 'Request Abandoned',
      detail: 'The client closed the connection while the request waited for its turn.',
      code: 'queue_abandoned',
    };
    return { ...this.#problem(req, p, 'queue_abandoned', EMPTY, undefined, ip), rules, key, identity };
  }

  /**
   * A request refused by a run-time block: 403 or 429 as the block says, with `Retry-After` counting down to its
   * end when it has one. The body names no rule and no reason (those are the operator's), only when to return.
   */
  blocked(
    req: HttpRequestInfo,
    rule: OverrideRule,
    key: string,
    identity: Identity | undefined,
    ip: string | undefined,
    nowMs: number,
  ): Verdict {
    const status = rule.status === 403 ? 403 : 429;
    const until = rule.expiresAt;
    const p: HttpProblem = {
      status,
      title: status === 403 ? 'Forbidden' : 'Too Many Requests',
      detail:
        until === undefined
          ? 'Requests of this client are blocked.'
          : `Requests of this client are blocked until ${new Date(until).toISOString()}.`,
      code: 'blocked',
    };
    const extra: HeaderPair[] =
      until === undefined ? [] : [retryAfterPair(Math.ceil((until - nowMs) / 1000))];
    return { ...this.#problem(req, p, 'blocked', extra, undefined, ip), key, identity };
  }

  /** A request target that cannot be matched safely: 400, decided by nothing. */
  badTarget(req: HttpRequestInfo, refusal: TargetRefusal): Verdict {
    return this.#problem(
      req,
      { status: 400, title: 'Bad Request', detail: refusal.detail, code: 'bad_request_target' },
      `bad_target_${refusal.code}`,
      EMPTY,
      undefined,
    );
  }

  /**
   * Credentials that `identify` refused: 401, with the public-auth decision when the failure counted; the
   * failure's `refusal` (400 and its code) instead when it names one.
   */
  invalidCredentials(
    req: HttpRequestInfo,
    failure: CredentialFailure,
    decision: Decision | undefined,
    ip: string | undefined,
  ): Verdict {
    const refusal = failure.refusal;
    const p: HttpProblem =
      refusal === undefined
        ? {
            status: 401,
            title: 'Invalid Credentials',
            detail: failure.detail ?? 'The credentials are not valid.',
            code: 'invalid_credentials',
          }
        : {
            status: refusal.status,
            title: 'Bad Request',
            detail: failure.detail ?? 'The credentials name no caller that can be keyed.',
            code: refusal.code,
          };
    return this.#problem(
      req,
      p,
      refusal === undefined ? `invalid_credentials_${failure.reason}` : refusal.code,
      failure.headers ?? EMPTY,
      decision,
      ip,
    );
  }

  /** A store that threw: 503 with `Retry-After: 1`, whatever the failure mode (the store applies it itself). */
  storeFailed(
    req: HttpRequestInfo,
    ip: string | undefined,
    rules: readonly string[] | undefined,
    key: string | undefined,
  ): Verdict {
    const p: HttpProblem = {
      status: 503,
      title: 'Rate Limiter Unavailable',
      detail: 'The rate limiter cannot decide right now; try again shortly.',
      code: ProblemCode.Unavailable,
    };
    const v = this.#problem(req, p, 'store_unavailable', [RETRY_1], undefined, ip);
    return rules === undefined ? v : { ...v, rules, key };
  }

  /** The request's correlation id: the caller's, else a valid one from the request header, else a new one. */
  correlationId(req: HttpRequestInfo): string {
    return req.correlationId ?? correlationIdOf(req.headers, this.#o.requestIdHeader);
  }

  #problem(
    req: HttpRequestInfo,
    p: HttpProblem,
    outcome: string,
    extra: readonly HeaderPair[],
    decision: Decision | undefined,
    ip?: string,
  ): Verdict {
    const correlationId = this.correlationId(req);
    const headers: HeaderPair[] = [...extra];
    this.#denyHeaders(headers, correlationId);
    const body = httpProblemBody(p, req.path, correlationId, this.#o.typeOf);
    return {
      action: 'deny',
      status: p.status as Verdict['status'],
      outcome,
      headers,
      body,
      decision,
      clientIp: ip,
      rules: NO_NAMES,
    };
  }

  /** An index loop: `for...of` over the list allocated an iterator per denial. */
  #denyHeaders(headers: HeaderPair[], correlationId: string): void {
    for (let i = 0; i < DENY_HEADERS.length; i++) headers.push(DENY_HEADERS[i]);
    headers.push([this.#o.requestIdName, correlationId]);
  }

  /**
   * Every header of a denial with a body, in order: the rate-limit fields, `Retry-After`, the problem's fields
   * and the request id. The common case (draft-11 fields only, one policy, a decision of the store) is one array
   * of exactly its seven pairs, six of them shared; any other goes through the general lists.
   */
  #denialHeaders(facts: DecidedFacts, d: Decision, correlationId: string): HeaderPair[] {
    const plan = facts.header;
    // A cost above a burst is never admitted, however long the client waits: no Retry-After to try again after.
    const waitable = d.reason !== 'cost_exceeds_burst';
    if (
      waitable &&
      this.#draft &&
      !this.#legacy &&
      !this.#o.partitionKey &&
      d instanceof SingleDecision &&
      plan.policies.length === 1 &&
      plan.policyValue !== ''
    ) {
      return [
        plan.policyPair,
        plan.onePair(d.policy, d.remaining, d.resetSeconds),
        retryAfterPair(d.retryAfterSeconds),
        // The three fields of DENY_HEADERS, as #denyHeaders adds them (the property test holds both paths equal).
        DENY_HEADERS[0],
        DENY_HEADERS[1],
        DENY_HEADERS[2],
        [this.#o.requestIdName, correlationId],
      ];
    }
    const headers = this.#o.mode === 'none' ? [] : this.#rateLimitHeaders(facts, d);
    if (waitable) headers.push(retryAfterPair(d.retryAfterSeconds));
    this.#denyHeaders(headers, correlationId);
    return headers;
  }

  #rateLimitHeaders(facts: DecidedFacts, d: Decision): HeaderPair[] {
    const plan = facts.header;
    // A one-policy decision of the store is always known, and its outcome list is built only when read: the
    // `RateLimit` pair comes from its fields (and is shared while they repeat).
    if (this.#draft && d instanceof SingleDecision && plan.policies.length === 1 && !this.#o.partitionKey) {
      // The admission of the common case (draft-11 fields only) is one array of its two pairs, made at its size:
      // pushing into an empty array grows its store first.
      if (!this.#legacy && plan.policyValue !== '') {
        return [plan.policyPair, plan.onePair(d.policy, d.remaining, d.resetSeconds)];
      }
      const out: HeaderPair[] = [];
      if (plan.policyValue !== '') {
        out.push(plan.policyPair);
        out.push(plan.onePair(d.policy, d.remaining, d.resetSeconds));
      }
      if (this.#legacy) this.#legacyHeaders(out, facts, d);
      return out;
    }
    const out: HeaderPair[] = [];
    const known =
      d.outcomes.length > 0 && d.reason !== 'store_unavailable' && d.reason !== 'store_unavailable_open';
    if (this.#draft && plan.policyValue !== '') {
      if (this.#o.partitionKey && known) {
        const keys = d.outcomes.map((x) => partitionKeyOf(x.key));
        out.push([HeaderName.RateLimitPolicy, formatRateLimitPolicy(plan.policies, { partitionKeys: keys })]);
        out.push([HeaderName.RateLimit, formatRateLimit(d.outcomes, { partitionKeys: keys })]);
      } else {
        out.push(plan.policyPair);
        if (known) out.push([HeaderName.RateLimit, plan.state(d.outcomes)]);
      }
    }
    if (this.#legacy && known) this.#legacyHeaders(out, facts, d);
    return out;
  }

  #legacyHeaders(out: HeaderPair[], facts: DecidedFacts, d: Decision): void {
    const m = mostRestrictive(d);
    if (m === undefined) return;
    // The limit and the policy name are the policy's own, and the reset repeats within a second: shared pairs,
    // so an answer makes only its remaining count's.
    const plan = facts.header;
    const fixed = plan.legacyPairs(m.policy, facts.legacyNames);
    out.push(fixed.limit);
    out.push([HeaderName.LegacyRemaining, String(m.remaining)]);
    out.push(plan.legacyResetPair(resetEpochSeconds(this.#o.wallClock(), m.resetSeconds)));
    out.push(fixed.policy);
  }
}

/** The code a rule set for the policy that decided the denial, if any. */
function problemCodeOf(codes: ReadonlyMap<Policy, string>, d: Decision): string | undefined {
  const m = mostRestrictive(d);
  return m === undefined ? undefined : codes.get(m.policy);
}
