import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { type Decision, definePolicy, ErrorCode, ManualClock, SluiceError } from '../core/index.js';
import { MemoryStore, resolveMemoryStoreOptions } from './index.js';

const p = definePolicy({ name: 'rl.write', quota: 60, window: 60, burst: 2 });
const q = definePolicy({ name: 'rl.read', quota: 60, window: 60, burst: 2 });

function store(options: Record<string, unknown> = {}) {
  const clock = new ManualClock(10_000);
  return { clock, store: new MemoryStore({ clock, sweepIntervalMs: 0, ...options }) };
}

describe('MemoryStore options', () => {
  it('applies documented defaults and freezes them', () => {
    const o = resolveMemoryStoreOptions();
    expect(o).toMatchObject({ maxTrackedKeys: 1_000_000, sweepIntervalMs: 60_000, evictionSampleSize: 8 });
    expect(Object.isFrozen(o)).toBe(true);
  });

  it('rejects bad values with the option name, expectation and value', () => {
    expect(() => new MemoryStore({ maxTrackedKeys: 0 })).toThrow(
      'maxTrackedKeys must be an integer from 1 to',
    );
    expect(() => new MemoryStore({ sweepIntervalMs: -1 })).toThrow(/sweepIntervalMs must be .* got -1/);
    expect(() => new MemoryStore({ maxTrackedKeys: '10' as never })).toThrow(/got "10"/);
    expect(() => new MemoryStore({ clock: {} as never })).toThrow(/clock must have now\(\) and sleep\(\)/);
    expect(() => new MemoryStore({ maxTrackedKey: 5 } as never)).toThrow(/maxTrackedKey/);
  });
});

describe('bounded memory', () => {
  it('never holds more than maxTrackedKeys buckets with three times as many distinct keys', () => {
    const { store: s } = store({ maxTrackedKeys: 1000 });
    for (let i = 0; i < 3000; i++) {
      s.decide([{ policy: p, key: `k${i}` }], 1);
      expect(s.size).toBeLessThanOrEqual(1000);
    }
    expect(s.size).toBe(1000);
    expect(s.stats().evictions).toBe(2000);
  });

  it('does not store a bucket that stays full (a denied or zero-cost visit)', () => {
    const { store: s } = store();
    s.peek([{ policy: p, key: 'a' }], 1);
    s.decide([{ policy: p, key: 'b' }], 5); // cost above burst: denied, takes nothing
    expect(s.size).toBe(0);
  });

  it('the sweep removes only full buckets', () => {
    const { store: s, clock } = store();
    s.decide([{ policy: p, key: 'old' }], 1);
    clock.advance(1_500); // "old" is full again (1 token per second)
    s.decide([{ policy: p, key: 'young' }], 2);
    clock.advance(1_000); // "young" holds 1 of 2
    expect(s.sweep()).toBe(1);
    expect(s.size).toBe(1);
    expect(s.peek([{ policy: p, key: 'young' }], 1).outcomes[0].remaining).toBe(1);
    expect(s.stats()).toMatchObject({ fullDropped: 1, sweeps: 1, trackedKeys: 1 });
  });

  it('a swept bucket decides exactly like the one that was there', () => {
    const { store: s, clock } = store();
    s.decide([{ policy: p, key: 'k' }], 2);
    clock.advance(5_000);
    const before = s.peek([{ policy: p, key: 'k' }], 1);
    s.sweep();
    expect(s.peek([{ policy: p, key: 'k' }], 1)).toEqual(before);
  });

  it('sweeps asynchronously in slices', async () => {
    const { store: s, clock } = store({ sweepSliceSize: 10 });
    for (let i = 0; i < 95; i++) s.decide([{ policy: p, key: `k${i}` }], 1);
    clock.advance(60_000);
    expect(s.sweepSlice(0, 10)).toBe(10);
    expect(await s.sweepAsync()).toBe(85);
    expect(s.size).toBe(0);
  });

  it('eviction prefers a full bucket, then the oldest', () => {
    const { store: s, clock } = store({ maxTrackedKeys: 3, evictionSampleSize: 64 });
    s.decide([{ policy: p, key: 'a' }], 1);
    clock.advance(1_000); // "a" full again at +1 s
    s.decide([{ policy: p, key: 'b' }], 2);
    clock.advance(10);
    s.decide([{ policy: p, key: 'c' }], 2);
    s.decide([{ policy: p, key: 'd' }], 2); // evicts "a", the full one
    const held = (k: string) => s.peek([{ policy: p, key: k }], 1).outcomes[0].remaining;
    expect(s.stats()).toMatchObject({ evictions: 0, fullDropped: 1 });
    expect([held('b'), held('c'), held('d')]).toEqual([0, 0, 0]);
    clock.advance(10);
    s.decide([{ policy: p, key: 'e' }], 2); // none full: evicts "b", the oldest
    expect(s.stats().evictions).toBe(1);
    expect(held('b')).toBe(2);
    expect([held('c'), held('d'), held('e')]).toEqual([0, 0, 0]);
  });

  it('never evicts a bucket of the decision in progress', () => {
    const { store: s } = store({ maxTrackedKeys: 1 });
    const d = s.decide(
      [
        { policy: p, key: 'x' },
        { policy: q, key: 'x' },
      ],
      1,
    );
    expect(d.allowed).toBe(true);
    // Both buckets were taken from; the table exceeds its cap by at most one request's checks.
    expect(s.size).toBe(2);
    s.decide([{ policy: p, key: 'y' }], 1);
    expect(s.size).toBeLessThanOrEqual(2);
  });

  it("keeps a key its bucket when a decision over two keys evicts the other key's first bucket", () => {
    const r = definePolicy({ name: 'rl.other', quota: 60, window: 60, burst: 2 });
    const { store: s } = store({ maxTrackedKeys: 1 });
    // b's first bucket (policy q) is the only one held; the next decision adds a's and b's buckets of p and r.
    s.decide([{ policy: q, key: 'b' }], 1);
    expect(
      s.decide(
        [
          { policy: p, key: 'a' },
          { policy: r, key: 'b' },
        ],
        1,
      ).allowed,
    ).toBe(true);
    // Inserting a's bucket evicted b's first one: b's bucket of r chains on its own, with one token taken.
    expect(s.decide([{ policy: r, key: 'b' }], 2).allowed).toBe(false);
    expect(s.decide([{ policy: r, key: 'b' }], 1).allowed).toBe(true);
    expect(s.decide([{ policy: p, key: 'a' }], 2).allowed).toBe(false);
  });

  it('refund of a missing bucket is a no-op, and refund never exceeds burst', () => {
    const { store: s } = store();
    s.refund([{ policy: p, key: 'none' }], 1);
    expect(s.size).toBe(0);
    s.decide([{ policy: p, key: 'k' }], 1);
    s.refund([{ policy: p, key: 'k' }], 5);
    expect(s.peek([{ policy: p, key: 'k' }], 1).outcomes[0]).toMatchObject({ remaining: 2, resetSeconds: 0 });
  });

  it('refuses calls after close, and close stops the sweep timer', async () => {
    const s = new MemoryStore({ sweepIntervalMs: 1_000 });
    s.decide([{ policy: p, key: 'k' }], 1);
    s.close();
    expect(() => s.decide([{ policy: p, key: 'k' }], 1)).toThrow(
      expect.objectContaining({ code: ErrorCode.StoreClosed }),
    );
    expect(() => s.refund([], 1)).toThrow(/closed/);
    expect(() => s.reset([])).toThrow(/closed/);
    expect(await s.sweepAsync()).toBe(0);
  });

  it('grows its arrays and reuses freed slots', () => {
    const { store: s, clock } = store({ maxTrackedKeys: 5000 });
    for (let i = 0; i < 4000; i++) s.decide([{ policy: p, key: `k${i}` }], 1);
    clock.advance(60_000);
    expect(s.sweep()).toBe(4000);
    for (let i = 0; i < 4000; i++) s.decide([{ policy: q, key: `k${i}` }], 1);
    expect(s.size).toBe(4000);
    expect(s.peek([{ policy: q, key: 'k3999' }], 1).outcomes[0].remaining).toBe(1);
  });
});

describe('policy count', () => {
  it('refuses a 65,536th distinct policy with ERR_TOO_MANY_POLICIES, and keeps deciding for the others', () => {
    const { store: s } = store({ maxTrackedKeys: 100 });
    const first = definePolicy({ name: 'p0', quota: 1, window: 60, burst: 1 });
    s.decide([{ policy: first, key: 'k' }], 1);
    for (let i = 1; i < 65_535; i++) {
      s.decide([{ policy: definePolicy({ name: `p${i}`, quota: 1, window: 60, burst: 1 }), key: 'k' }], 1);
    }
    const extra = definePolicy({ name: 'one-too-many', quota: 1, window: 60, burst: 1 });
    let thrown: unknown;
    try {
      s.decide([{ policy: extra, key: 'k' }], 1);
    } catch (e) {
      thrown = e;
    }
    expect(thrown).toBeInstanceOf(SluiceError);
    expect(thrown).toMatchObject({ code: ErrorCode.TooManyPolicies, details: { limit: 65_535 } });
    expect((thrown as Error).message).toMatch(/65,535 distinct policies/);
    // With a known policy beside it, nothing is taken from the known one (all or nothing).
    const both = [
      { policy: first, key: 'aon' },
      { policy: extra, key: 'aon' },
    ];
    expect(() => s.decide(both, 1)).toThrow(/65,535 distinct policies/);
    expect(s.peek([{ policy: first, key: 'aon' }], 1).outcomes[0].remaining).toBe(1);
    // A policy already known still works: the table is not damaged.
    expect(s.decide([{ policy: first, key: 'other' }], 1).allowed).toBe(true);
  });
});

describe('prefetch and places', () => {
  const KEYS = ['a', 'b', 'c', 'ip:192.0.2.1', 'ip:192.0.2.2'];
  const step = fc.oneof(
    {
      weight: 6,
      arbitrary: fc.record({
        kind: fc.constant('batch' as const),
        lines: fc.array(
          fc.record({ k: fc.nat(4), other: fc.nat(4), same: fc.boolean(), skip: fc.boolean() }),
          {
            minLength: 1,
            maxLength: 8,
          },
        ),
      }),
    },
    fc.record({ kind: fc.constant('time' as const), ms: fc.integer({ min: 0, max: 3000 }) }),
    fc.record({ kind: fc.constant('sweep' as const) }),
    fc.record({ kind: fc.constant('reset' as const), k: fc.nat(4) }),
  );
  const summary = (d: Decision) => ({
    allowed: d.allowed,
    retryAfter: d.retryAfterSeconds,
    remaining: d.outcomes.map((o) => o.remaining),
  });

  it('decides as without prefetch, whatever places the caller keeps and whatever moves them (property)', () => {
    fc.assert(
      fc.property(fc.array(step, { maxLength: 40 }), fc.integer({ min: 1, max: 8 }), (steps, cap) => {
        const clock = new ManualClock(0);
        const a = new MemoryStore({ clock, sweepIntervalMs: 0, maxTrackedKeys: cap });
        const b = new MemoryStore({ clock, sweepIntervalMs: 0, maxTrackedKeys: cap });
        // What a caller such as a log replay keeps per key: the place and the count it was read at.
        const places = new Map<string, { place: number; moved: number }>();
        for (const s of steps) {
          if (s.kind === 'batch') {
            for (const { k } of s.lines) {
              const kept = places.get(KEYS[k]);
              const place = a.prefetch(KEYS[k], kept?.place, kept?.moved);
              places.set(KEYS[k], { place, moved: a.placesMoved });
            }
            for (const line of s.lines) {
              // Some prefetched lines are never decided (an exempt request), and some checks name another key.
              if (line.skip) continue;
              const checks = [
                { policy: p, key: KEYS[line.k] },
                { policy: q, key: KEYS[line.same ? line.k : line.other] },
              ];
              expect(summary(a.decide(checks, 1))).toEqual(summary(b.decide(checks, 1)));
            }
          } else if (s.kind === 'time') clock.advance(s.ms);
          else if (s.kind === 'sweep') {
            a.sweep();
            b.sweep();
          } else {
            const checks = [{ policy: p, key: KEYS[s.k] }];
            a.reset(checks);
            b.reset(checks);
          }
        }
      }),
      { numRuns: 500 },
    );
  });

  it('gives a key its place once it has a bucket, and moves the count when an eviction takes one', () => {
    const { store: s } = store({ maxTrackedKeys: 1 });
    expect(s.prefetch('a')).toBe(-1);
    s.decide([{ policy: p, key: 'a' }], 1);
    const place = s.prefetch('a');
    expect(place).toBeGreaterThanOrEqual(0);
    const moved = s.placesMoved;
    expect(s.prefetch('a', place, moved)).toBe(place);
    s.decide([{ policy: p, key: 'b' }], 1);
    expect(s.placesMoved).toBeGreaterThan(moved);
    // A place read before the move is not taken on trust: 'a' has no bucket now.
    expect(s.prefetch('a', place, moved)).toBe(-1);
  });

  it('tells the place a decision gave a key, as a later prefetch finds it', () => {
    const { store: s } = store();
    expect(s.placeOf('a')).toBe(-1);
    s.decide(
      [
        { policy: p, key: 'a' },
        { policy: q, key: 'a' },
      ],
      1,
    );
    const place = s.placeOf('a');
    expect(place).toBeGreaterThanOrEqual(0);
    expect(s.prefetch('a')).toBe(place);
    expect(s.prefetch('a', place, s.placesMoved)).toBe(place);
  });
});
