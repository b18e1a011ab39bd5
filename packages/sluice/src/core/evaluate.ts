import { msUntil, remainingTokens, retryAfterSeconds, secondsUntilFull } from './bucket-math.js';
import { type Decision, type DecisionReason, NO_OUTCOMES, type PolicyOutcome } from './decision.js';
import type { Check } from './store.js';

/** What a store is asked to do with the refilled buckets. */
export type EvaluateMode = 'decide' | 'reserve' | 'peek';

/**
 * The all-or-nothing decision over refilled buckets, shared by every store so that they cannot disagree.
 *
 * `units` holds each check's bucket after refill, in the order of `checks`; on return it holds the units after
 * the decision (the caller writes them back). Nothing here allocates except the returned decision.
 *
 * @param checks - the request's policies and keys.
 * @param units - in: refilled units per check; out: units after the decision.
 * @param cost - whole tokens asked for, an integer >= 1.
 * @param mode - `decide` takes tokens, `reserve` may also go into queue debt, `peek` takes nothing.
 * @param phases - per check, milliseconds since its current refill step began (`now - nextLast(...)`); read for
 * stepped policies only, so callers without any may leave it out.
 * @returns the decision with one outcome per check.
 */
export function evaluate(
  checks: readonly Check[],
  units: Float64Array,
  cost: number,
  mode: EvaluateMode,
  phases?: Float64Array,
): Decision {
  const n = checks.length;
  let blocked = false;
  let exceeds = false;
  let delayMs = 0;
  // First pass: does any enforcing policy deny? Nothing is taken until every policy agrees.
  for (let i = 0; i < n; i++) {
    const p = checks[i].policy;
    if (cost > p.burst) {
      if (!p.shadow) exceeds = true;
      continue;
    }
    const after = units[i] - cost * p.unitsPerToken;
    if (after >= 0) continue;
    if (mode === 'reserve' && p.queue !== undefined && -after <= p.debtUnits) {
      const wait = msUntil(p, after, 0, phases === undefined ? 0 : phases[i]);
      if (wait <= p.queue.maxWaitMs) {
        if (wait > delayMs) delayMs = wait;
        continue;
      }
    }
    if (!p.shadow) blocked = true;
  }
  const allowed = !blocked && !exceeds;
  const take = allowed && mode !== 'peek';
  let retryAfter = 0;
  let violatedCount = 0;
  const outcomes: PolicyOutcome[] = new Array(n);
  for (let i = 0; i < n; i++) {
    const check = checks[i];
    const p = check.policy;
    const before = units[i];
    const phase = phases === undefined ? 0 : phases[i];
    const need = cost * p.unitsPerToken;
    let limited: boolean;
    if (cost > p.burst) limited = true;
    else if (before >= need) limited = false;
    else if (mode === 'reserve' && p.queue !== undefined && need - before <= p.debtUnits) {
      limited = msUntil(p, before - need, 0, phase) > p.queue.maxWaitMs;
    } else limited = true;
    let after = before;
    if (take && !limited) {
      after = before - need;
      units[i] = after;
    }
    let retry = 0;
    if (limited) {
      // A cost above burst can never be met; Retry-After then tells when the bucket is full, the best there is.
      retry =
        cost > p.burst
          ? Math.max(1, secondsUntilFull(p, before, phase))
          : retryAfterSeconds(p, before, cost, phase);
      if (!p.shadow) {
        violatedCount++;
        if (retry > retryAfter) retryAfter = retry;
      }
    }
    outcomes[i] = {
      policy: p,
      key: check.key,
      limited,
      remaining: remainingTokens(p, after),
      resetSeconds: secondsUntilFull(p, after, phase),
      retryAfterSeconds: retry,
    };
  }
  let violated = NO_OUTCOMES;
  if (violatedCount > 0) {
    const list: PolicyOutcome[] = [];
    for (const o of outcomes) if (o.limited && !o.policy.shadow) list.push(o);
    violated = list;
  }
  const reason: DecisionReason = allowed ? 'allowed' : exceeds ? 'cost_exceeds_burst' : 'limited';
  return {
    allowed,
    reason,
    cost,
    retryAfterSeconds: allowed ? 0 : retryAfter,
    delayMs: allowed ? delayMs : 0,
    outcomes,
    violated,
  };
}
