import type { Decision } from './decision.js';

/**
 * A decision as a plain object, each field read from `d` and then replaced by `changes`. A store's decision is
 * a class instance (`SingleDecision`, `ManyDecision`) whose `reason`, `retryAfterSeconds`, `outcomes` and
 * `violated` are getters: an object spread or `Object.assign` copies only own fields and loses them, so every
 * copy of a decision goes through here.
 *
 * @param d - any decision.
 * @param changes - fields to give instead of `d`'s.
 */
export function plainDecision(d: Decision, changes?: Partial<Decision>): Decision {
  const plain: Decision = {
    allowed: d.allowed,
    reason: d.reason,
    cost: d.cost,
    retryAfterSeconds: d.retryAfterSeconds,
    delayMs: d.delayMs,
    outcomes: d.outcomes,
    violated: d.violated,
  };
  return changes === undefined ? plain : { ...plain, ...changes };
}
