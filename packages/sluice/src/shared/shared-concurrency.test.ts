import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { definePolicy, ManualClock } from '../core/index.js';
import type { Check } from '../core/store.js';
import { SharedStore } from './index.js';

const SLOTS = 3;

describe('concurrency policies on the shared table', () => {
  it('two stores on one table (as two threads) share one count in flight per key, never above N nor below 0', () => {
    fc.assert(
      fc.property(
        fc.array(fc.record({ thread: fc.integer({ min: 0, max: 1 }), take: fc.boolean(), i: fc.nat() }), {
          maxLength: 100,
        }),
        (steps) => {
          const clock = new ManualClock(0);
          const first = new SharedStore({ clock, sweepIntervalMs: 0 });
          const threads = [first, new SharedStore({ clock, sweepIntervalMs: 0, table: first.table })];
          // Each thread defines the policy from its own configuration, as the gateway's threads do.
          const policies = threads.map(() =>
            definePolicy({ name: 'reports', concurrent: SLOTS, retryAfter: 2 }),
          );
          const running: { thread: number; checks: Check[] }[] = [];
          for (const s of steps) {
            if (s.take) {
              const checks = [{ policy: policies[s.thread], key: 'client' }];
              const d = threads[s.thread].decide(checks, 1);
              if (d.allowed) running.push({ thread: s.thread, checks });
              else expect(d.retryAfterSeconds).toBe(2);
              expect(d.outcomes[0].remaining).toBe(SLOTS - running.length);
            } else if (running.length > 0) {
              // A release from whichever thread served the request.
              const [r] = running.splice(s.i % running.length, 1);
              threads[r.thread].refund(r.checks, 1);
            }
            expect(running.length).toBeLessThanOrEqual(SLOTS);
          }
          for (const r of running.splice(0)) threads[r.thread].refund(r.checks, 1);
          const d = threads[1].peek([{ policy: policies[1], key: 'client' }], 1);
          expect(d.outcomes[0].remaining).toBe(SLOTS);
          for (const t of threads) t.close();
        },
      ),
      { numRuns: 100 },
    );
  });
});
