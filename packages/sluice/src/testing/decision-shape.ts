import { expect } from 'vitest';
import type { Decision, DecisionReason } from '../core/index.js';

const REASONS: readonly DecisionReason[] = [
  'allowed',
  'limited',
  'cost_exceeds_burst',
  'store_unavailable',
  'store_unavailable_open',
];

/** True for a whole number of at least 0: what every count and every second of a decision is. */
function isCount(v: unknown): boolean {
  return typeof v === 'number' && Number.isInteger(v) && v >= 0;
}

/**
 * Fails unless a decision reads as the `Decision` interface says, whoever built it (a store, its failure mode, a
 * cache): a boolean verdict, a known reason, and whole, non-negative numbers for the cost, every second and every
 * outcome's r and t, so that no `NaN` or fraction can reach a header or a problem body. Fields are read through
 * the interface (getters included), never copied.
 *
 * @param d - the decision.
 * @param cost - the cost asked for, which the decision must repeat.
 */
export function expectWellFormedDecision(d: Decision, cost?: number): void {
  const bad = (field: string, value: unknown) =>
    `${field} must be a whole number >= 0, got ${String(value)} (reason ${String(d.reason)})`;
  expect(typeof d.allowed, 'allowed').toBe('boolean');
  expect(REASONS, 'reason').toContain(d.reason);
  for (const field of ['cost', 'retryAfterSeconds', 'delayMs'] as const) {
    expect(isCount(d[field]), bad(field, d[field])).toBe(true);
  }
  if (cost !== undefined) expect(d.cost, 'cost').toBe(cost);
  if (d.allowed) expect(d.retryAfterSeconds, 'retryAfterSeconds of an admission').toBe(0);
  else expect(d.delayMs, 'delayMs of a denial').toBe(0);
  expect(Array.isArray(d.outcomes), 'outcomes').toBe(true);
  for (const o of d.outcomes) {
    expect(typeof o.policy?.name, 'outcome policy').toBe('string');
    expect(typeof o.key, 'outcome key').toBe('string');
    expect(typeof o.limited, 'outcome limited').toBe('boolean');
    for (const field of ['remaining', 'resetSeconds', 'retryAfterSeconds'] as const) {
      expect(isCount(o[field]), bad(`outcome ${field}`, o[field])).toBe(true);
    }
  }
  for (const v of d.violated) expect(d.outcomes, 'violated outcomes are outcomes').toContain(v);
}
