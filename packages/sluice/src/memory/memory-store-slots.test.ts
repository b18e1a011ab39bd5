import { describe, expect, it } from 'vitest';
import { ManualClock } from '../core/manual-clock.js';
import { definePolicy, type Policy } from '../core/policy.js';
import type { Check } from '../core/store.js';
import { MemoryStore } from './memory-store.js';

const rate = definePolicy({ name: 'rl', quota: 6000, window: 60, burst: 1000 });
const slotsOf = (n: number): Policy => definePolicy({ name: 'reports', concurrent: n, retryAfter: 2 });

describe('concurrency buckets on the memory store', () => {
  it('are never evicted at the key cap while slots are taken: their requests stay counted', () => {
    const clock = new ManualClock(0);
    const store = new MemoryStore({ clock, sweepIntervalMs: 0, maxTrackedKeys: 8, evictionSampleSize: 2 });
    const slots = slotsOf(2);
    const mine: Check[] = [{ policy: slots, key: 'ip:203.0.113.7' }];
    expect(store.decide(mine, 1).allowed).toBe(true);
    expect(store.decide(mine, 1).allowed).toBe(true);
    // Others fill the table again and again: the buckets of the rate policy come and go.
    for (let i = 0; i < 500; i++) {
      clock.advance(10);
      store.decide([{ policy: rate, key: `ip:198.18.0.${i}` }], 1);
    }
    expect(store.decide(mine, 1).allowed).toBe(false);
    // Once they are given back, the bucket is full and may go like any other.
    store.refund(mine, 1);
    expect(store.decide(mine, 1).allowed).toBe(true);
  });

  it('keep the requests in flight when a reload changes the limit: the new limit applies to them', () => {
    const clock = new ManualClock(0);
    const store = new MemoryStore({ clock, sweepIntervalMs: 0 });
    const before = slotsOf(2);
    const old: Check[] = [{ policy: before, key: 'k' }];
    expect(store.decide(old, 1).allowed).toBe(true);
    expect(store.decide(old, 1).allowed).toBe(true);
    // The reload: a new policy object of the same name with 3 slots. Two are in flight: one more, not three.
    const after = slotsOf(3);
    const now: Check[] = [{ policy: after, key: 'k' }];
    expect(store.decide(now, 1).allowed).toBe(true);
    const refused = store.decide(now, 1);
    expect(refused.allowed).toBe(false);
    expect(refused.outcomes[0].remaining).toBe(0);
    // The requests admitted before the reload give their slots back through the old policy object: to the same
    // bucket, never above the new limit.
    store.refund(old, 1);
    store.refund(old, 1);
    expect(store.peek(now, 1).outcomes[0].remaining).toBe(2);
    store.refund(now, 1);
    store.refund(old, 1);
    expect(store.peek(now, 1).outcomes[0].remaining).toBe(3);
  });

  it('count the requests in flight above a lowered limit until enough of them end', () => {
    const clock = new ManualClock(0);
    const store = new MemoryStore({ clock, sweepIntervalMs: 0 });
    const old: Check[] = [{ policy: slotsOf(3), key: 'k' }];
    for (let i = 0; i < 3; i++) expect(store.decide(old, 1).allowed).toBe(true);
    const now: Check[] = [{ policy: slotsOf(1), key: 'k' }];
    expect(store.decide(now, 1).allowed).toBe(false);
    store.refund(old, 1);
    store.refund(old, 1);
    expect(store.decide(now, 1).allowed).toBe(false);
    store.refund(old, 1);
    expect(store.decide(now, 1).allowed).toBe(true);
    expect(store.decide(now, 1).allowed).toBe(false);
  });
});
