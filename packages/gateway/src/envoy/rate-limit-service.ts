import { randomUUID } from 'node:crypto';
import { type Check, type Decision, ErrorCode, plainDecision, SluiceError } from 'sluice';
import {
  formatDecisionHeaders,
  isValidCorrelationId,
  PROBLEM_CONTENT_TYPE,
  rateLimitProblemBody,
} from 'sluice/http';
import type { AdmissionHost } from '../admission/admit-request.js';
import { BucketTurns, MAX_WAITING_PER_BUCKET, type TurnOptions } from './bucket-turns.js';
import { decideUnits, type Resolved, storeFailing } from './decide-units.js';
import { admitted, NOTHING } from './decision-copies.js';
import { statusOf } from './descriptor-status.js';
import { type DescriptorEntry, EnvoyPlan, MAX_OVERRIDES } from './envoy-plan.js';
import {
  type DescriptorStatusMessage,
  type RateLimitRequestMessage,
  type RateLimitResponseMessage,
  RateLimitServiceError,
} from './rls-messages.js';
import { splitBySlot } from './split-by-slot.js';

/** The largest hits a descriptor may add; a uint64 beyond it cannot be a real request's weight. */
const MAX_HITS = 1_000_000_000;
const MAX_ENTRIES = 32;
const EMPTY = Buffer.alloc(0);
/** A queued request whose caller left before its turn: answered without a store call, counted nowhere. */
const LEFT = Symbol('left');

/**
 * Envoy's `ShouldRateLimit` over Sluice policies, independent of the transport: descriptors are matched against
 * the `envoy:` configuration of the gateway in effect (rebuilt on reload, keeping unchanged buckets), each
 * matched limit is one policy and the descriptor's entries are its bucket key, `hits_addend` is the cost, and all
 * descriptors are decided at once, all or nothing. Statuses carry `current_limit`, `limit_remaining` (r) and
 * `duration_until_reset` (t, the seconds until the bucket is full); the answer carries the draft-11 RateLimit
 * headers (and legacy ones in header mode `both`), Retry-After and a problem body when over limit.
 *
 * @example
 * ```ts
 * const service = new RateLimitService(gateway);
 * const answer = await service.shouldRateLimit({ domain: 'edge', descriptors: [{ entries: [{ key: 'remote_address', value: '10.0.0.1' }] }] });
 * ```
 */
export class RateLimitService {
  readonly #host: AdmissionHost;
  readonly #now: () => number;
  /** Requests decided in several store calls take turns on their buckets (see decideUnits). */
  readonly #turns: BucketTurns;
  #plan: EnvoyPlan | undefined;

  /**
   * @param host - the running gateway (store, metrics, configuration in effect).
   * @param now - wall-clock milliseconds for reset epochs; default `Date.now`.
   * @param maxWaiting - requests that may wait for their turn on one bucket (default 32); one past it is decided
   * at once, out of turn.
   */
  constructor(host: AdmissionHost, now: () => number = Date.now, maxWaiting = MAX_WAITING_PER_BUCKET) {
    this.#host = host;
    this.#now = now;
    this.#turns = new BucketTurns(maxWaiting);
  }

  /** The plan of the configuration in effect, rebuilt when a reload replaced it. */
  get plan(): EnvoyPlan {
    const config = this.#host.runtime.config;
    let plan = this.#plan;
    if (plan === undefined || plan.source !== config) {
      if (config.envoy === undefined) {
        // A reload removed the section: keep the last plan until the listener is restarted.
        if (plan !== undefined) return plan;
        throw new RateLimitServiceError('unavailable', 'no envoy section is configured');
      }
      plan = new EnvoyPlan(config, plan);
      this.#plan = plan;
    }
    return plan;
  }

  /**
   * Decides one request.
   *
   * @param request - the decoded `RateLimitRequest`.
   * @param requestId - Envoy's `x-request-id`, for the problem body; a new id when absent or unsafe.
   * @param gone - true once the caller left (call cancelled, deadline passed): a request still waiting for its turn
   * then ends without a store call (`unavailable`, nothing taken, no decision counted).
   * @returns the `RateLimitResponse`.
   * @throws RateLimitServiceError `invalid_argument` for an empty domain, no descriptors, too many, an empty
   * entry list or key, a limit override of an unknown unit; `unavailable` when the store cannot decide.
   */
  async shouldRateLimit(
    request: RateLimitRequestMessage,
    requestId?: string,
    gone?: () => boolean,
  ): Promise<RateLimitResponseMessage> {
    const plan = this.plan;
    const host = this.#host;
    const domain = request.domain ?? '';
    if (domain === '')
      throw new RateLimitServiceError('invalid_argument', 'rate limit domain must not be empty');
    const descriptors = request.descriptors ?? [];
    if (descriptors.length === 0) {
      throw new RateLimitServiceError('invalid_argument', 'rate limit descriptor list must not be empty');
    }
    if (descriptors.length > plan.config.maxDescriptors) {
      throw new RateLimitServiceError(
        'invalid_argument',
        `at most ${plan.config.maxDescriptors} descriptors per request (envoy.maxDescriptors), got ${descriptors.length}`,
      );
    }
    const hits = request.hits_addend === undefined || request.hits_addend === 0 ? 1 : request.hits_addend;
    const resolved: Resolved[] = [];
    for (let i = 0; i < descriptors.length; i++)
      resolved.push(resolve(plan, host.logger, domain, descriptors[i], hits, i));

    const decision = await this.#decide(resolved, gone);
    const shadow = plan.config.shadowMode;
    const over = !decision.allowed && !shadow;
    const statuses: DescriptorStatusMessage[] = [];
    let o = 0;
    for (const r of resolved) {
      if (r.check === undefined) {
        statuses.push({ code: 'OK', current_limit: null, limit_remaining: 0, duration_until_reset: null });
        continue;
      }
      const outcome = decision.outcomes[o++];
      // No outcome: the store failed and the failure mode admits; nothing is known about the bucket.
      statuses.push(
        outcome === undefined
          ? { code: 'OK', current_limit: null, limit_remaining: 0, duration_until_reset: null }
          : statusOf(r.node, outcome),
      );
    }
    const nowMs = this.#now();
    const mode = host.runtime.config.headers.mode;
    const shown = over ? decision : admitted(decision);
    const headers = decision.outcomes.length === 0 ? [] : formatDecisionHeaders(shown, { mode, nowMs });
    let body = EMPTY;
    if (over) {
      headers.push(['Content-Type', PROBLEM_CONTENT_TYPE] as const);
      const pathEntry = findPath(descriptors);
      body = Buffer.from(
        rateLimitProblemBody({
          decision,
          path: pathEntry ?? '',
          correlationId:
            requestId !== undefined && isValidCorrelationId(requestId) ? requestId : randomUUID(),
          nowMs,
          typeOf: host.runtime.problemType,
        }),
      );
    }
    return {
      overall_code: over ? 'OVER_LIMIT' : 'OK',
      statuses,
      response_headers_to_add: headers.map(([key, value]) => ({ key, value })),
      request_headers_to_add: [],
      raw_body: body,
    };
  }

  /** All or nothing over every descriptor with a limit; costs that differ are decided per cost, see below. */
  async #decide(resolved: readonly Resolved[], gone?: () => boolean): Promise<Decision> {
    const host = this.#host;
    const limited = resolved.filter((r) => r.check !== undefined);
    if (limited.length === 0) return NOTHING;
    const store = host.store;
    const turns = this.#turns;
    const buckets = limited.map(bucketOf);
    try {
      let decision: Decision;
      const cost = limited[0].cost;
      if (limited.every((r) => r.cost === cost)) {
        const checks = limited.map((r) => r.check as Check);
        const atOnce = async (): Promise<Decision> => {
          const d = await (cost === 0 ? store.peek(checks, 1) : store.decide(checks, cost));
          return cost === 0 ? plainDecision(d, { cost: 0 }) : d;
        };
        // One atomic call needs no turn, unless a request decided in several calls holds one of its buckets: its
        // provisional take would read as this request's denial. A call a Redis Cluster splits by slot is several
        // calls (a take per slot, given back on a denial): it takes its turn too.
        const inTurn = turns.busy(buckets) || (cost > 0 && splitBySlot(store, checks));
        decision = await (inTurn ? turns.run(buckets, atOnce, this.#turnOptions(atOnce, gone)) : atOnce());
      } else {
        const byCost = new Map<number, Resolved[]>();
        for (const r of limited) byCost.set(r.cost, [...(byCost.get(r.cost) ?? []), r]);
        const units = () => decideUnits(store, [...byCost.values()], limited);
        decision = await turns.run(buckets, units, this.#turnOptions(units, gone));
      }
      if (decision.reason === 'store_unavailable') {
        throw new RateLimitServiceError(
          'unavailable',
          'the rate-limit store cannot decide (failure mode closed)',
        );
      }
      host.metrics.recordDecision(decision, { store: store.kind });
      return decision;
    } catch (e) {
      if (e instanceof RateLimitServiceError) throw e;
      if (e === LEFT) {
        host.logger.debug('envoy rate limit request left before its turn: not decided');
        throw new RateLimitServiceError('unavailable', 'the caller left before its turn');
      }
      if (e instanceof SluiceError && e.code === ErrorCode.TooManyPolicies) {
        // Not an outage that store.failureMode may answer OK for: the store refuses this request's override
        // policy, so answering OK would turn the override into no limit. Envoy's failure_mode_deny decides.
        host.logger.error({ err: e }, 'the rate-limit store holds no more policies');
        throw new RateLimitServiceError(
          'unavailable',
          'the rate-limit store holds no more distinct policies (Envoy limit overrides included)',
          { cause: e },
        );
      }
      host.metrics.recordStoreError(store.kind);
      host.logger.error({ err: e }, 'rate-limit store failed');
      if (e instanceof SluiceError && host.runtime.config.store.failureMode !== 'closed') return NOTHING;
      throw new RateLimitServiceError('unavailable', 'the rate-limit store cannot decide', { cause: e });
    }
  }

  /**
   * A request's hooks in its turn: past the bound of waiting requests it is decided at once, out of turn, by the
   * same store calls (tokens stay exact, only its statuses may meet another request's provisional take); its caller
   * gone when the turn comes, it ends untouched; queued behind a request that found the store failing, it is
   * answered by the failure mode at once rather than wait a store timeout of its own.
   */
  #turnOptions(decide: () => Promise<Decision>, gone: (() => boolean) | undefined): TurnOptions<Decision> {
    return {
      gone,
      failing: storeFailing,
      skip: (why) => {
        if (why === 'full') return decide();
        if (why === 'gone') return Promise.reject(LEFT);
        const open = this.#host.runtime.config.store.failureMode !== 'closed';
        return {
          allowed: open,
          reason: open ? 'store_unavailable_open' : 'store_unavailable',
          cost: 1,
          retryAfterSeconds: 0,
          delayMs: 0,
          outcomes: [],
          violated: [],
        };
      },
    };
  }
}

/** The id of a descriptor's bucket within this process: its policy and its key. */
function bucketOf(r: Resolved): string {
  const c = r.check as Check;
  return `${c.policy.name}\n${c.key}`;
}

function resolve(
  plan: EnvoyPlan,
  logger: AdmissionHost['logger'],
  domain: string,
  d: NonNullable<RateLimitRequestMessage['descriptors']>[number],
  hits: number,
  index: number,
): Resolved {
  const raw = d.entries ?? [];
  if (raw.length === 0 || raw.length > MAX_ENTRIES) {
    throw new RateLimitServiceError(
      'invalid_argument',
      `descriptors[${index}] must have 1 to ${MAX_ENTRIES} entries, got ${raw.length}`,
    );
  }
  const entries: DescriptorEntry[] = [];
  for (const e of raw) {
    if (e.key === undefined || e.key === '') {
      throw new RateLimitServiceError('invalid_argument', `descriptors[${index}] has an entry without a key`);
    }
    entries.push({ key: e.key, value: plan.entryValue(e.key, e.value ?? '') });
  }
  let cost = hits;
  if (d.hits_addend !== undefined && d.hits_addend !== null) {
    const v = Number(d.hits_addend.value ?? 0);
    if (!Number.isSafeInteger(v) || v < 0 || v > MAX_HITS) {
      throw new RateLimitServiceError(
        'invalid_argument',
        `descriptors[${index}].hits_addend must be from 0 to ${MAX_HITS}`,
      );
    }
    cost = v;
  }
  const node = plan.match(domain, entries);
  const key = plan.bucketKey(domain, entries);
  const override = d.limit;
  if (override !== undefined && override !== null) {
    // Applied whatever its count: an override that cannot be held exactly becomes the nearest limit that can,
    // never none (an error would be Envoy's failure mode, by default "allow"). A full override table evicts its
    // least recently used override rather than refuse this one.
    const policy = plan.overridePolicy(
      domain,
      node,
      override.requests_per_unit ?? 0,
      String(override.unit ?? ''),
      {
        field: `descriptors[${index}].limit`,
        onAdjusted: (sizes, p) =>
          logger.warn(
            { policy: p.name, asked: override.requests_per_unit ?? 0, unit: override.unit, ...sizes },
            'envoy limit override adjusted to the nearest limit Sluice can hold',
          ),
        onEvicted: (evicted, evictions) => {
          // The first eviction, then one line per table's worth: a flood of overrides cannot flood the log.
          if (evictions === 1 || evictions % MAX_OVERRIDES === 0) {
            logger.warn(
              {
                evictions,
                capacity: MAX_OVERRIDES,
                policy: evicted.name,
                quota: evicted.quota,
                window: evicted.window,
              },
              'envoy limit override table full: least recently used evicted',
            );
          }
        },
      },
    );
    return { check: { policy, key }, node, cost };
  }
  if (node?.policy === undefined) return { check: undefined, node, cost };
  return { check: { policy: node.policy, key }, node, cost };
}

function findPath(descriptors: NonNullable<RateLimitRequestMessage['descriptors']>): string | undefined {
  for (const d of descriptors) {
    for (const e of d.entries ?? []) {
      if ((e.key === 'path' || e.key === ':path') && e.value !== undefined && e.value.startsWith('/'))
        return e.value;
    }
  }
  return undefined;
}
