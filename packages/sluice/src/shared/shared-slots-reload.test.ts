import { describe, expect, it } from 'vitest';
import { type Check, definePolicy, ManualClock, type Policy } from '../core/index.js';
import { SharedStore } from './index.js';

const slotsOf = (n: number): Policy => definePolicy({ name: 'reports', concurrent: n, retryAfter: 2 });
const on = (p: Policy): Check[] => [{ policy: p, key: 'client' }];

/** Two stores on one table, as two threads of one process. */
function threads() {
  const clock = new ManualClock(0);
  const first = new SharedStore({ clock, sweepIntervalMs: 0 });
  return [first, new SharedStore({ clock, sweepIntervalMs: 0, table: first.table })];
}

describe('concurrency policies on the shared table across a reload that changes the limit', () => {
  it('keep the requests in flight counted, out of the new limit, in every thread', () => {
    const [a, b] = threads();
    const old = slotsOf(2);
    expect(a.decide(on(old), 1).allowed).toBe(true);
    expect(b.decide(on(old), 1).allowed).toBe(true);
    // Thread a reloaded to 3 slots, thread b not yet: one count, each thread's limit applied to it.
    const raised = slotsOf(3);
    expect(a.decide(on(raised), 1).allowed).toBe(true);
    expect(a.decide(on(raised), 1).allowed).toBe(false);
    expect(b.decide(on(slotsOf(2)), 1).allowed).toBe(false);
    // The requests admitted before the reload give their slots back to the same count, never above the limit.
    a.refund(on(old), 1);
    b.refund(on(old), 1);
    expect(a.peek(on(raised), 1).outcomes[0].remaining).toBe(2);
    a.refund(on(raised), 1);
    b.refund(on(old), 1);
    expect(a.peek(on(raised), 1).outcomes[0].remaining).toBe(3);
  });

  it('count the requests above a lowered limit until enough of them end', () => {
    const [a] = threads();
    const old = slotsOf(3);
    for (let i = 0; i < 3; i++) expect(a.decide(on(old), 1).allowed).toBe(true);
    const lowered = slotsOf(1);
    expect(a.decide(on(lowered), 1).allowed).toBe(false);
    a.refund(on(old), 1);
    a.refund(on(old), 1);
    expect(a.decide(on(lowered), 1).allowed).toBe(false);
    a.refund(on(old), 1);
    expect(a.decide(on(lowered), 1).allowed).toBe(true);
    // Sweeping keeps a bucket with slots taken, and drops it once they are back.
    a.sweep?.();
    expect(a.decide(on(lowered), 1).allowed).toBe(false);
  });
});

describe('concurrency buckets on the shared table at its key cap', () => {
  it('are never evicted while slots are taken: their requests stay counted, in every thread', () => {
    const clock = new ManualClock(0);
    const a = new SharedStore({ clock, sweepIntervalMs: 0, maxTrackedKeys: 8, evictionSampleSize: 2 });
    const b = new SharedStore({ clock, sweepIntervalMs: 0, table: a.table });
    // Slow to refill, so that the others' buckets are never full and the oldest bucket is the one to go.
    const rate = definePolicy({ name: 'rl', quota: 10, window: 3600 });
    const mine: Check[] = [{ policy: slotsOf(2), key: 'ip:203.0.113.7' }];
    expect(a.decide(mine, 1).allowed).toBe(true);
    expect(b.decide(mine, 1).allowed).toBe(true);
    // Others fill the table again and again, from both threads: the buckets of the rate policy come and go.
    for (let i = 0; i < 500; i++) {
      clock.advance(10);
      (i % 2 === 0 ? a : b).decide([{ policy: rate, key: `ip:198.18.${i >> 8}.${i & 255}` }], 1);
    }
    expect(a.decide(mine, 1).allowed).toBe(false);
    expect(b.decide(mine, 1).allowed).toBe(false);
    // Once they are given back, the bucket is full and may go like any other.
    a.refund(mine, 1);
    expect(b.decide(mine, 1).allowed).toBe(true);
  });
});
