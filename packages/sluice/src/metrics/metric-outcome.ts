import type { Decision } from '../core/index.js';
import type { MetricOutcome } from './limiter-metrics.js';

/**
 * The {@link MetricOutcome} of the policy at `index` in `decision.outcomes`.
 *
 * A store failure labels every policy with the failure mode's effect, because no bucket was consulted. Otherwise a
 * shadow policy that would have denied is `shadow_limited` (whatever happened to the request), an enforcing policy
 * that lacked tokens is `limited`, and a policy that had tokens is `allowed` when the request went ahead and
 * `denied_by_other` when another policy denied it (all or nothing: nothing was taken from it).
 *
 * @param decision - the decision.
 * @param index - the position of the policy in `decision.outcomes`.
 * @returns the outcome label value.
 */
export function metricOutcome(decision: Decision, index: number): MetricOutcome {
  const o = decision.outcomes[index];
  return outcomeOf(decision, o.policy.shadow, o.limited);
}

/**
 * The {@link MetricOutcome} of one policy given its shadow flag and whether it lacked tokens; the same rules as
 * {@link metricOutcome}, for callers that hold these values without an outcome object (a single-policy decision).
 */
export function outcomeOf(decision: Decision, shadow: boolean, limited: boolean): MetricOutcome {
  if (decision.reason === 'store_unavailable') return 'failed_closed';
  if (decision.reason === 'store_unavailable_open') return 'failed_open';
  if (limited) return shadow ? 'shadow_limited' : 'limited';
  return decision.allowed ? 'allowed' : 'denied_by_other';
}

/** Index of each outcome in {@link METRIC_OUTCOMES}, for caches keyed by outcome. */
export const OUTCOME_INDEX: Readonly<Record<MetricOutcome, number>> = Object.freeze({
  allowed: 0,
  limited: 1,
  shadow_limited: 2,
  denied_by_other: 3,
  exempt: 4,
  failed_open: 5,
  failed_closed: 6,
});
