import type { Policy } from './policy.js';

/*
 * The token-bucket arithmetic, in integer units (see Policy). Every store (memory, the Redis script) computes
 * exactly these functions; the conformance suite holds them to it. All inputs are integers below 2^53, so each
 * division below is correctly rounded and Math.floor and Math.ceil of it are exact.
 *
 * A stepped policy (`policy.stepMs > 0`) keeps the same state, units and a time `last`, but `last` is the start of
 * the current step on the bucket's own timeline rather than the last use. Its derived values then also need the
 * phase, `now - last` after {@link nextLast}: how far into the current step the bucket is. A continuous policy
 * ignores the phase; each function pays one check of `stepMs` for the stepped case.
 */

/**
 * Refills a bucket: `min(capacity, units + elapsed x quota)`, or for a stepped policy
 * `min(capacity, units + floor(elapsed / step) x tokens)`. Time that went backwards adds nothing.
 *
 * @param policy - the bucket's policy.
 * @param units - the units held at `last`.
 * @param elapsedMs - whole milliseconds since `last`; negative values are clamped to 0.
 * @returns the units held now.
 */
export function refill(policy: Policy, units: number, elapsedMs: number): number {
  if (elapsedMs <= 0) return units;
  const e = Math.min(elapsedMs, policy.fillMs);
  const next =
    policy.stepMs === 0
      ? units + e * policy.refillPerMs
      : units + Math.floor(e / policy.stepMs) * policy.stepUnits;
  return Math.min(next, policy.capacityUnits);
}

/**
 * The bucket's `last` after a refill at `now`. Continuous: `now`, never moved backwards. Stepped: the start of
 * the current step (`last` plus the whole steps just credited), or `now` when the bucket is full, because a full
 * bucket decides like a missing one and its steps start again with the next take.
 *
 * @param policy - the bucket's policy.
 * @param refilled - the units after {@link refill} at `now`.
 * @param last - the stored `last`.
 * @param now - whole milliseconds.
 */
export function nextLast(policy: Policy, refilled: number, last: number, now: number): number {
  if (policy.stepMs === 0) return Math.max(now, last);
  if (refilled >= policy.capacityUnits) return now;
  if (now <= last) return last;
  return last + Math.floor((now - last) / policy.stepMs) * policy.stepMs;
}

/** r: whole tokens left, `floor(tokens)`, never below 0 (a bucket in debt shows 0). */
export function remainingTokens(policy: Policy, units: number): number {
  if (units <= 0) return 0;
  return Math.floor(units / policy.unitsPerToken);
}

/**
 * Milliseconds from the start of the current step until the step that brings `need` more units (need > 0).
 * The caller subtracts the phase.
 */
function stepsMs(policy: Policy, need: number): number {
  return Math.ceil(need / policy.stepUnits) * policy.stepMs;
}

/**
 * t: whole seconds until the bucket is full, `ceil((B - tokens) / R)`, 0 when full. Stepped: until the step that
 * fills it, `ceil((ceil((B - tokens) / tokens per step) x step - phase) / 1000)`.
 *
 * @param phase - stepped only: milliseconds since the current step began (`now - nextLast(...)`).
 */
export function secondsUntilFull(policy: Policy, units: number, phase = 0): number {
  const deficit = policy.capacityUnits - units;
  if (deficit <= 0) return 0;
  // A concurrency policy never refills by time: only releases fill it, so no time can be told.
  if (policy.concurrent > 0) return 0;
  if (policy.stepMs === 0) return Math.ceil(deficit / policy.refillPerSecond);
  return Math.ceil((stepsMs(policy, deficit) - phase) / 1000);
}

/**
 * Retry-After for a denial: `max(1, ceil((cost - tokens) / R))` seconds; stepped, the seconds until the step
 * that brings the missing tokens, at least 1.
 *
 * @param phase - stepped only: milliseconds since the current step began.
 */
export function retryAfterSeconds(policy: Policy, units: number, cost: number, phase = 0): number {
  const need = cost * policy.unitsPerToken - units;
  if (need <= 0) return 1;
  // A slot comes back when some request ends, at no time the bucket knows: the configured hint.
  if (policy.concurrent > 0) return policy.retryAfterHint;
  const s =
    policy.stepMs === 0
      ? Math.ceil(need / policy.refillPerSecond)
      : Math.ceil((stepsMs(policy, need) - phase) / 1000);
  return Math.max(s, 1);
}

/**
 * Milliseconds until `units` reach `target` units, rounded up; 0 when they already do. Stepped: until the step
 * that brings them.
 *
 * @param phase - stepped only: milliseconds since the current step began.
 */
export function msUntil(policy: Policy, units: number, target: number, phase = 0): number {
  const need = target - units;
  if (need <= 0) return 0;
  // Never by time for a concurrency policy (its debt is 0, so no reservation waits on it).
  if (policy.concurrent > 0) return Number.MAX_SAFE_INTEGER;
  if (policy.stepMs === 0) return Math.ceil(need / policy.refillPerMs);
  return stepsMs(policy, need) - phase;
}

/** True when a bucket holding `units` at `last` is full at `now`, and so decides like a missing bucket. */
export function isFullAt(policy: Policy, units: number, last: number, now: number): boolean {
  return refill(policy, units, now - last) >= policy.capacityUnits;
}
