import type { Policy } from './policy.js';

/*
 * The token-bucket arithmetic, in integer units (see Policy). Every store (memory, the Redis script) computes
 * exactly these functions; the conformance suite holds them to it. All inputs are integers below 2^53, so each
 * division below is correctly rounded and Math.floor and Math.ceil of it are exact.
 */

/**
 * Refills a bucket: `min(capacity, units + elapsed x quota)`. Time that went backwards adds nothing.
 *
 * @param policy - the bucket's policy.
 * @param units - the units held at `last`.
 * @param elapsedMs - whole milliseconds since `last`; negative values are clamped to 0.
 * @returns the units held now.
 */
export function refill(policy: Policy, units: number, elapsedMs: number): number {
  if (elapsedMs <= 0) return units;
  const e = Math.min(elapsedMs, policy.fillMs);
  const next = units + e * policy.refillPerMs;
  return Math.min(next, policy.capacityUnits);
}

/** r: whole tokens left, `floor(tokens)`, never below 0 (a bucket in debt shows 0). */
export function remainingTokens(policy: Policy, units: number): number {
  if (units <= 0) return 0;
  return Math.floor(units / policy.unitsPerToken);
}

/** t: whole seconds until the bucket is full, `ceil((B - tokens) / R)`, 0 when full. */
export function secondsUntilFull(policy: Policy, units: number): number {
  const deficit = policy.capacityUnits - units;
  return deficit <= 0 ? 0 : Math.ceil(deficit / policy.refillPerSecond);
}

/** Retry-After for a denial: `max(1, ceil((cost - tokens) / R))` seconds. */
export function retryAfterSeconds(policy: Policy, units: number, cost: number): number {
  const need = cost * policy.unitsPerToken - units;
  if (need <= 0) return 1;
  const s = Math.ceil(need / policy.refillPerSecond);
  return Math.max(s, 1);
}

/** Milliseconds until `units` reach `target` units, rounded up; 0 when they already do. */
export function msUntil(policy: Policy, units: number, target: number): number {
  const need = target - units;
  return need <= 0 ? 0 : Math.ceil(need / policy.refillPerMs);
}

/** True when a bucket holding `units` at `last` is full at `now`, and so decides like a missing bucket. */
export function isFullAt(policy: Policy, units: number, last: number, now: number): boolean {
  return refill(policy, units, now - last) >= policy.capacityUnits;
}
