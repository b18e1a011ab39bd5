import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { type Check, type Decision, definePolicy, ManualClock } from '../core/index.js';
import { MemoryStore } from './index.js';

const minute = definePolicy({ name: 'minute', quota: 6, window: 60, burst: 3 });
const hour = definePolicy({ name: 'hour', quota: 20, window: 3600 });
const stepped = definePolicy({ name: 'stepped', quota: 2, window: 10, refill: { tokens: 2, every: 10 } });
const queued = definePolicy({
  name: 'queued',
  quota: 2,
  window: 1,
  burst: 2,
  queue: { limit: 4, maxWaitMs: 3000 },
});

/** What a decision says, read at once: every field and every outcome. */
function read(d: Decision) {
  return {
    allowed: d.allowed,
    reason: d.reason,
    cost: d.cost,
    retryAfterSeconds: d.retryAfterSeconds,
    delayMs: d.delayMs,
    outcomes: d.outcomes.map((o) => ({ ...o })),
    violated: d.violated.map((o) => ({ ...o })),
  };
}

const LISTS: Check[][] = [
  [{ policy: minute, key: 'a' }],
  [
    { policy: minute, key: 'a' },
    { policy: hour, key: 'a' },
  ],
  [
    { policy: minute, key: 'b' },
    { policy: hour, key: 'b' },
    { policy: stepped, key: 'a' },
  ],
  [
    { policy: queued, key: 'a' },
    { policy: hour, key: 'c' },
  ],
];

describe('MemoryStore recycle', () => {
  it('decides as a store given nothing back, in every mode, whatever is given back when (property)', () => {
    fc.assert(
      fc.property(
        fc.array(
          fc.record({
            list: fc.nat(LISTS.length - 1),
            mode: fc.constantFrom('decide' as const, 'reserve' as const, 'peek' as const),
            cost: fc.integer({ min: 1, max: 4 }),
            ms: fc.nat(20_000),
            back: fc.nat(3),
          }),
          { maxLength: 60 },
        ),
        (steps) => {
          const ca = new ManualClock(0);
          const cb = new ManualClock(0);
          const plain = new MemoryStore({ clock: ca, sweepIntervalMs: 0 });
          const reusing = new MemoryStore({ clock: cb, sweepIntervalMs: 0 });
          const held: Decision[] = [];
          for (const { list, mode, cost, ms, back } of steps) {
            ca.advance(ms);
            cb.advance(ms);
            const got = reusing[mode](LISTS[list], cost);
            expect(read(got)).toEqual(read(plain[mode](LISTS[list], cost)));
            held.push(got);
            // Some are given back at once, some later, some twice; the rest are kept.
            if (back === 0) reusing.recycle(got);
            else if (back === 1 && held.length > 2) reusing.recycle(held[held.length - 3]);
            else if (back === 2) {
              reusing.recycle(got);
              reusing.recycle(got);
            }
          }
        },
      ),
      { numRuns: 300 },
    );
  });

  it('writes the next decision into one given back, once however often it was given back', () => {
    const s = new MemoryStore({ clock: new ManualClock(0), sweepIntervalMs: 0 });
    const two = LISTS[1];
    const first = s.decide(two, 1);
    s.recycle(first);
    s.recycle(first);
    const second = s.decide(two, 1);
    expect(second).toBe(first);
    expect(second.outcomes[0]).toMatchObject({ limited: false, remaining: 1 });
    expect(s.decide(two, 1)).not.toBe(first);
    const one = s.decide(LISTS[0], 1);
    s.recycle(one);
    expect(s.decide(LISTS[0], 1)).toBe(one);
    // A plain object is no decision of the store: ignored.
    s.recycle({ ...read(second), cost: 1 });
    expect(s.decide(two, 1)).not.toBe(second);
  });
});
