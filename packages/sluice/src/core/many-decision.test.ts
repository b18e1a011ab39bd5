import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { evaluate } from './evaluate.js';
import { ManyDecision } from './many-decision.js';
import { definePolicy, type Policy } from './policy.js';
import type { Check } from './store.js';

// Policies of every shape a decision reads differently: continuous and stepped, shadow, a queue, a small burst.
const POLICIES: readonly Policy[] = [
  definePolicy({ name: 'minute', quota: 300, window: 60, burst: 50 }),
  definePolicy({ name: 'hour', quota: 10_000, window: 3600 }),
  definePolicy({ name: 'stepped', quota: 5, window: 10, refill: { tokens: 5, every: 10 } }),
  definePolicy({ name: 'shadow', quota: 2, window: 1, burst: 2, shadow: true }),
  definePolicy({ name: 'queued', quota: 4, window: 1, burst: 4, queue: { limit: 8, maxWaitMs: 1500 } }),
  definePolicy({ name: 'tiny', quota: 1, window: 1, burst: 1 }),
];

const arbCase = fc.record({
  picks: fc.array(fc.record({ p: fc.nat(POLICIES.length - 1), fill: fc.double({ min: -0.5, max: 1 }) }), {
    minLength: 2,
    maxLength: 5,
  }),
  phases: fc.array(fc.nat(9999), { minLength: 5, maxLength: 5 }),
  cost: fc.integer({ min: 1, max: 6 }),
  mode: fc.constantFrom('decide' as const, 'reserve' as const, 'peek' as const),
});

describe('ManyDecision', () => {
  it('decides, writes units back and reads out exactly as evaluate does', () => {
    fc.assert(
      fc.property(arbCase, ({ picks, phases, cost, mode }) => {
        const checks: Check[] = picks.map(({ p }, i) => ({ policy: POLICIES[p], key: `k${i % 2}` }));
        // Whole units, as stores hold them, from a little debt to a full bucket.
        const start = Float64Array.from(picks, ({ p, fill }) => Math.floor(fill * POLICIES[p].capacityUnits));
        const ph = Float64Array.from(checks, (c, i) =>
          c.policy.stepMs > 0 ? phases[i] % c.policy.stepMs : 0,
        );
        const a = Float64Array.from(start);
        const b = Float64Array.from(start);
        const want = evaluate(checks, a, cost, mode, ph);
        const got = new ManyDecision(checks, b, cost, mode, ph);
        expect([...b]).toEqual([...a]);
        expect(got.toJSON()).toEqual(want);
        expect(JSON.parse(JSON.stringify(got))).toEqual(JSON.parse(JSON.stringify(want)));
        for (let i = 0; i < checks.length; i++) {
          expect(got.policyAt(i)).toBe(want.outcomes[i].policy);
          expect(got.limitedAt(i)).toBe(want.outcomes[i].limited);
        }
        expect(got.size).toBe(checks.length);
        // Read twice, the same lists.
        expect(got.outcomes).toBe(got.outcomes);
        expect(got.violated).toBe(got.violated);
      }),
      { numRuns: 2000 },
    );
  });
});
