import type { Policy } from './policy.js';

/*
 * A cost settled after the response: the difference between what a request was charged at admission and what it
 * turned out to cost (tokens a model spent, bytes a download sent, units an upstream named in a header). Every
 * store computes exactly this function, on units already refilled to now, so they agree bit for bit.
 */

/**
 * The units of a bucket after settling `deltaTokens` whole tokens: a negative delta gives them back, never above
 * the burst (like a refund); a positive one takes them even below zero, a debt the next requests wait out, down to
 * `policy.settleDebtUnits` owed (one burst). A bucket already deeper in debt (a queue's reservation) keeps its level.
 *
 * @param policy - the bucket's policy.
 * @param units - the bucket's units refilled to now.
 * @param deltaTokens - an integer: tokens to take (positive) or to give back (negative).
 * @returns the units to store.
 */
export function settledUnits(policy: Policy, units: number, deltaTokens: number): number {
  if (deltaTokens === 0) return units;
  // Beyond the burst plus the deepest debt a delta changes nothing more; capped so that the product stays exact.
  const most =
    policy.burst + Math.floor(Math.max(policy.debtUnits, policy.settleDebtUnits) / policy.unitsPerToken);
  if (deltaTokens < 0) {
    return Math.min(units + Math.min(-deltaTokens, most) * policy.unitsPerToken, policy.capacityUnits);
  }
  const floor = Math.min(units, -policy.settleDebtUnits);
  return Math.max(units - Math.min(deltaTokens, most) * policy.unitsPerToken, floor);
}
