import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  type Check,
  type Decision,
  definePolicy,
  evaluate,
  ManyDecision,
  type Policy,
  SingleDecision,
} from './index.js';
import { plainDecision } from './plain-decision.js';

// Policies a decision reads differently: continuous, stepped, shadow, a small burst, concurrency slots.
const POLICIES: readonly Policy[] = [
  definePolicy({ name: 'minute', quota: 300, window: 60, burst: 50 }),
  definePolicy({ name: 'stepped', quota: 5, window: 10, refill: { tokens: 5, every: 10 } }),
  definePolicy({ name: 'shadow', quota: 2, window: 1, burst: 2, shadow: true }),
  definePolicy({ name: 'tiny', quota: 1, window: 1, burst: 1 }),
  definePolicy({ name: 'slots', concurrent: 2, retryAfter: 3 }),
];

const arbCase = fc.record({
  picks: fc.array(fc.record({ p: fc.nat(POLICIES.length - 1), fill: fc.double({ min: -0.5, max: 1 }) }), {
    minLength: 1,
    maxLength: 4,
  }),
  cost: fc.integer({ min: 1, max: 3 }),
});

/** Every field of the Decision interface, read through its getters. */
const fields = (d: Decision) => ({
  allowed: d.allowed,
  reason: d.reason,
  cost: d.cost,
  retryAfterSeconds: d.retryAfterSeconds,
  delayMs: d.delayMs,
  outcomes: d.outcomes,
  violated: d.violated,
});

/** The same buckets decided as each kind of decision a store or the engine gives. */
function decisions(checks: Check[], start: Float64Array, cost: number): Decision[] {
  const phases = new Float64Array(checks.length);
  const out: Decision[] = [
    evaluate(checks, Float64Array.from(start), cost, 'decide', phases),
    new ManyDecision(checks, Float64Array.from(start), cost, 'decide', phases),
  ];
  if (checks.length === 1) {
    const p = checks[0].policy;
    const before = start[0];
    const limited = cost > p.burst || before - cost * p.unitsPerToken < 0;
    const after = limited ? before : before - cost * p.unitsPerToken;
    out.push(new SingleDecision(p, checks[0].key, cost, before, after, limited, 0, 0));
  }
  return out;
}

describe('plainDecision', () => {
  it('keeps every field of a decision of each kind, and of one changed field the rest', () => {
    fc.assert(
      fc.property(arbCase, ({ picks, cost }) => {
        const checks: Check[] = picks.map(({ p }, i) => ({ policy: POLICIES[p], key: `k${i}` }));
        const start = Float64Array.from(picks, ({ p, fill }) => Math.floor(fill * POLICIES[p].capacityUnits));
        for (const d of decisions(checks, start, cost)) {
          const want = fields(d);
          const copy = plainDecision(d);
          expect(copy).toEqual(want);
          // A plain object: its fields are its own, so a further spread or JSON keeps them too.
          expect({ ...copy }).toEqual(want);
          expect(Object.keys(copy).sort()).toEqual(Object.keys(want).sort());
          const changed = plainDecision(d, { outcomes: [] });
          expect(changed).toEqual({ ...want, outcomes: [] });
          expect([...changed.violated]).toEqual([...d.violated]);
        }
      }),
      { numRuns: 500 },
    );
  });
});
