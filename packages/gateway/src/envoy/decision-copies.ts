import type { Decision } from 'sluice';

/** The same decision presented as admitted (global shadow mode): no Retry-After, nothing violated. */
export function admitted(d: Decision): Decision {
  if (d.allowed) return d;
  return {
    allowed: true,
    reason: 'allowed',
    cost: d.cost,
    retryAfterSeconds: 0,
    delayMs: 0,
    outcomes: d.outcomes,
    violated: [],
  };
}

/** The decision of a request no descriptor matched: allowed, nothing decided. */
export const NOTHING: Decision = Object.freeze({
  allowed: true,
  reason: 'allowed',
  cost: 1,
  retryAfterSeconds: 0,
  delayMs: 0,
  outcomes: Object.freeze([]),
  violated: Object.freeze([]),
}) as Decision;
