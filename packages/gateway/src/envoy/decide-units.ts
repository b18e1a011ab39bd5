import { type Check, type Decision, ErrorCode, type PolicyOutcome, SluiceError } from 'sluice';
import type { AdmissionHost } from '../admission/admit-request.js';
import type { TurnSettled } from './bucket-turns.js';
import type { CompiledNode } from './envoy-plan.js';

/** One request descriptor, resolved. */
export interface Resolved {
  /** The descriptor's policy and key; none when no limit applies. */
  readonly check: Check | undefined;
  /** The descriptor's node in the plan. */
  readonly node: CompiledNode | undefined;
  /** The descriptor's hits. */
  readonly cost: number;
}

/**
 * Whether a request's end in its turn shows the store failing: it threw (a timeout, a refused connection; not a
 * full policy table, which is this request's own) or the store answered by its failure mode (breaker open).
 */
export function storeFailing(settled: TurnSettled<Decision>): boolean {
  if (settled.ok)
    return settled.value.reason === 'store_unavailable' || settled.value.reason === 'store_unavailable_open';
  const e = settled.error;
  return !(e instanceof SluiceError && e.code === ErrorCode.TooManyPolicies);
}

/**
 * Decides descriptors that cannot share one store call: descriptors with different costs (a store decides one cost
 * at a time; a Redis Cluster store splits each unit's call by slot itself). Each unit (same cost, same call) is first
 * peeked: if any enforcing limit would deny, nothing is taken; otherwise each unit is decided, and should a
 * concurrent request have drained a bucket in between, the units already taken are refunded. Outcomes come back in
 * descriptor order.
 *
 * The caller runs it in the request's turn on its buckets (BucketTurns): a take of this sequence that a later unit's
 * denial refunds would otherwise drain a bucket for an instant, and a concurrent request of this process deciding
 * then would be denied by, and blame, a bucket that still holds tokens, with that bucket's shorter Retry-After.
 * Taking turns, each request sees the levels the previous one left, so its statuses and Retry-After come from the
 * peek or decision that admitted or denied it. Requests of other processes sharing the store are not in these
 * turns: one of them may still meet such an instant.
 *
 * @param units - descriptors decided together; each unit's descriptors share a cost.
 * @param order - the descriptors in request order (default: the units in order).
 */
export async function decideUnits(
  store: AdmissionHost['store'],
  units: readonly (readonly Resolved[])[],
  order: readonly Resolved[] = units.flat(),
): Promise<Decision> {
  const checks = units.map((u) => u.map((r) => r.check as Check));
  // Peeks write nothing: asked at once, a Redis that does not answer holds the turn one store timeout, not one a unit.
  const decisions: Decision[] = await Promise.all(
    units.map((u, i) => store.peek(checks[i], Math.max(u[0].cost, 1))),
  );
  let allowed = decisions.every((d) => d.allowed);
  if (allowed) {
    for (let i = 0; i < units.length; i++) {
      const cost = units[i][0].cost;
      // Failure mode open admitted this unit: its store would not answer the take either.
      if (cost === 0 || decisions[i].reason === 'store_unavailable_open') continue;
      const d = await store.decide(checks[i], cost);
      decisions[i] = d;
      if (!d.allowed) {
        allowed = false;
        for (let j = 0; j < i; j++) if (units[j][0].cost > 0) await store.refund(checks[j], units[j][0].cost);
        break;
      }
    }
  }
  const where = new Map<Resolved, PolicyOutcome>();
  units.forEach((u, i) => {
    u.forEach((r, k) => {
      where.set(r, decisions[i].outcomes[k]);
    });
  });
  const outcomes: PolicyOutcome[] = [];
  const violated: PolicyOutcome[] = [];
  let retry = 0;
  let exceeds = false;
  for (const r of order) {
    const outcome = where.get(r) as PolicyOutcome;
    outcomes.push(outcome);
    if (outcome.limited && !outcome.policy.shadow) {
      violated.push(outcome);
      if (outcome.retryAfterSeconds > retry) retry = outcome.retryAfterSeconds;
      if (r.cost > outcome.policy.burst) exceeds = true;
    }
  }
  const unavailable = decisions.some((d) => d.reason === 'store_unavailable');
  const open = decisions.some((d) => d.reason === 'store_unavailable_open');
  return {
    allowed,
    reason: allowed
      ? open
        ? 'store_unavailable_open'
        : 'allowed'
      : unavailable
        ? 'store_unavailable'
        : exceeds
          ? 'cost_exceeds_burst'
          : 'limited',
    cost: Math.max(...order.map((r) => r.cost)),
    retryAfterSeconds: allowed ? 0 : Math.max(1, retry),
    delayMs: 0,
    outcomes,
    violated: allowed ? [] : violated,
  };
}
