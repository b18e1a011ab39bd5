import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { ManualClock } from '../core/manual-clock.js';
import { definePolicy } from '../core/policy.js';
import type { Check } from '../core/store.js';
import { MemoryStore } from './memory-store.js';

const SLOTS = 3;
const slots = definePolicy({ name: 'reports', concurrent: SLOTS, retryAfter: 2 });
const rate = definePolicy({ name: 'rl', quota: 5, window: 60, burst: 5 });

/** One step: a request of client k starts, the i-th running request ends (completed or aborted), or time passes. */
type Step =
  | { readonly op: 'take'; readonly k: number }
  | { readonly op: 'end'; readonly i: number }
  | { readonly op: 'tick'; readonly ms: number };

const step: fc.Arbitrary<Step> = fc.oneof(
  fc.record({ op: fc.constant('take' as const), k: fc.integer({ min: 0, max: 2 }) }),
  fc.record({ op: fc.constant('end' as const), i: fc.nat() }),
  fc.record({ op: fc.constant('tick' as const), ms: fc.integer({ min: 0, max: 30_000 }) }),
);

describe('concurrency policies on the memory store', () => {
  it('the count in flight never exceeds N nor goes negative, under any interleaving of take, end and abort', () => {
    fc.assert(
      fc.property(fc.array(step, { maxLength: 120 }), (steps) => {
        const clock = new ManualClock(0);
        const store = new MemoryStore({ clock, sweepIntervalMs: 0 });
        const running: Check[][] = [];
        const held = [0, 0, 0];
        const taken = [0, 0, 0];
        for (const s of steps) {
          if (s.op === 'tick') {
            clock.advance(s.ms);
            store.sweep();
            continue;
          }
          if (s.op === 'end') {
            if (running.length === 0) continue;
            const [checks] = running.splice(s.i % running.length, 1);
            // An end and an abort both give the slot back, once.
            store.refund(
              checks.filter((c) => c.policy.concurrent > 0),
              1,
            );
            held[Number(checks[0].key)]--;
            continue;
          }
          const checks: Check[] = [
            { policy: slots, key: String(s.k) },
            { policy: rate, key: String(s.k) },
          ];
          const d = store.decide(checks, 1);
          const [o] = d.outcomes;
          if (d.allowed) {
            running.push(checks);
            held[s.k]++;
            taken[s.k]++;
          } else if (o.limited) {
            // Refused by its slots: every slot is held, and Retry-After is the configured hint.
            expect(held[s.k]).toBe(SLOTS);
            expect(d.retryAfterSeconds).toBe(2);
          }
          // r is the free slots, never negative; t is 0 (no time fills a concurrency policy).
          expect(o.remaining).toBe(SLOTS - held[s.k]);
          expect(o.resetSeconds).toBe(0);
          expect(held[s.k]).toBeLessThanOrEqual(SLOTS);
          expect(held[s.k]).toBeGreaterThanOrEqual(0);
        }
        // All or nothing: a request refused by its rate policy took no slot, so ending every running request
        // frees every slot.
        for (const checks of running.splice(0)) store.refund([checks[0]], 1);
        for (let k = 0; k < 3; k++) {
          expect(store.peek([{ policy: slots, key: String(k) }], 1).outcomes[0].remaining).toBe(SLOTS);
        }
      }),
      { numRuns: 300 },
    );
  });

  it('refuses a concurrency policy with a window, and a bad slot count, naming the option', () => {
    expect(() => definePolicy({ name: 'x', concurrent: 2, window: 60 } as never)).toThrow(
      /policy\.window must be absent beside concurrent/,
    );
    expect(() => definePolicy({ name: 'x', concurrent: 0 })).toThrow(/policy\.concurrent/);
    expect(() => definePolicy({ name: 'x', concurrent: 1.5 })).toThrow(/policy\.concurrent/);
  });
});
