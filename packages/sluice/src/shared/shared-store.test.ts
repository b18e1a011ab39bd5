import { describe, expect, it } from 'vitest';
import { definePolicy, ErrorCode, ManualClock, SluiceError } from '../core/index.js';
import { resolveSharedStoreOptions, SharedStore, sharedTimeClock, tableBytes } from './index.js';

const p = definePolicy({ name: 'rl.write', quota: 60, window: 60, burst: 2 });
const q = definePolicy({ name: 'rl.read', quota: 60, window: 60, burst: 2 });

function store(options: Record<string, unknown> = {}) {
  const clock = new ManualClock(10_000);
  return { clock, store: new SharedStore({ clock, sweepIntervalMs: 0, ...options }) };
}

describe('SharedStore options', () => {
  it('applies documented defaults and freezes them', () => {
    const o = resolveSharedStoreOptions();
    expect(o).toMatchObject({
      maxTrackedKeys: 1_000_000,
      maxPolicies: 1024,
      sweepIntervalMs: 60_000,
      evictionSampleSize: 8,
      clock: sharedTimeClock,
    });
    expect(Object.isFrozen(o)).toBe(true);
  });

  it('rejects bad values with the option name, expectation and value', () => {
    expect(() => new SharedStore({ maxTrackedKeys: 0 })).toThrow(
      'maxTrackedKeys must be an integer from 1 to',
    );
    expect(() => new SharedStore({ table: new ArrayBuffer(8) as never })).toThrow(
      /table must be the SharedArrayBuffer of another SharedStore/,
    );
    expect(() => new SharedStore({ table: new SharedArrayBuffer(256) })).toThrow(/this buffer is not one/);
    const { store: s } = store({ maxTrackedKeys: 10 });
    expect(() => new SharedStore({ table: s.table, maxTrackedKeys: 10 })).toThrow(
      /maxTrackedKeys must be left out when table is given/,
    );
    expect(() => new SharedStore({ clock: {} as never })).toThrow(/clock must have now\(\) and sleep\(\)/);
    expect(() => new SharedStore({ maxTrackedKey: 5 } as never)).toThrow(/maxTrackedKey/);
  });

  it('sizes the table at about 72 bytes per key (load one half)', () => {
    expect(tableBytes(1_000_000, 1024) / 1_000_000).toBeLessThan(80);
  });

  it('the default clock agrees with Date.now() to the millisecond range', () => {
    expect(Math.abs(sharedTimeClock.now() - Date.now())).toBeLessThan(1_000);
  });
});

describe('one table, two stores', () => {
  it('a store attached to the table sees and takes the same buckets', () => {
    const { store: a, clock } = store({ maxTrackedKeys: 100 });
    const b = new SharedStore({ table: a.table, clock, sweepIntervalMs: 0 });
    // Another object with the same definition, as another thread would build from the same configuration.
    const p2 = definePolicy({ name: 'rl.write', quota: 60, window: 60, burst: 2 });
    expect(a.decide([{ policy: p, key: 'k' }], 1).allowed).toBe(true);
    expect(b.decide([{ policy: p2, key: 'k' }], 1).allowed).toBe(true);
    expect(a.decide([{ policy: p, key: 'k' }], 1).allowed).toBe(false);
    expect(b.stats()).toMatchObject({ trackedKeys: 1, maxTrackedKeys: 100 });
    // A different definition under the same name is another policy: its own buckets.
    const other = definePolicy({ name: 'rl.write', quota: 60, window: 60, burst: 3 });
    expect(b.decide([{ policy: other, key: 'k' }], 1).outcomes[0].remaining).toBe(2);
    b.close();
    expect(() => b.decide([{ policy: p, key: 'k' }], 1)).toThrow(
      expect.objectContaining({ code: ErrorCode.StoreClosed }),
    );
    // Closing one thread's store leaves the table to the others.
    expect(a.peek([{ policy: p, key: 'k' }], 1).outcomes[0].remaining).toBe(0);
  });
});

describe('bounded memory', () => {
  it('files buckets by definition: a thread reloading a changed limit under the same name starts it full', () => {
    const { clock, store: first } = store();
    const second = new SharedStore({ table: first.table, clock, sweepIntervalMs: 0 });
    const five = definePolicy({ name: 'seal', quota: 5, window: 3600 });
    for (let i = 0; i < 6; i++) first.decide([{ policy: five, key: 'k' }], 1);
    // Each thread builds its own objects from the same file: an unchanged policy keeps the bucket.
    const same = definePolicy({ name: 'seal', quota: 5, window: 3600 });
    expect(second.decide([{ policy: same, key: 'k' }], 1).reason).toBe('limited');
    const eight = definePolicy({ name: 'seal', quota: 8, window: 3600 });
    const reasons = Array.from({ length: 9 }, () => second.decide([{ policy: eight, key: 'k' }], 1).reason);
    expect(reasons).toEqual([...Array(8).fill('allowed'), 'limited']);
  });

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
    s.decide([{ policy: p, key: 'b' }], 5);
    expect(s.size).toBe(0);
  });

  it('the sweep removes only full buckets', () => {
    const { store: s, clock } = store();
    s.decide([{ policy: p, key: 'old' }], 1);
    clock.advance(1_500);
    s.decide([{ policy: p, key: 'young' }], 2);
    clock.advance(1_000);
    expect(s.sweep()).toBe(1);
    expect(s.size).toBe(1);
    expect(s.peek([{ policy: p, key: 'young' }], 1).outcomes[0].remaining).toBe(1);
    expect(s.stats()).toMatchObject({ fullDropped: 1, sweeps: 1, trackedKeys: 1 });
  });

  it('sweeps asynchronously in slices, one sweep at a time over the table', async () => {
    const { store: s, clock } = store({ sweepSliceSize: 16, maxTrackedKeys: 200 });
    for (let i = 0; i < 95; i++) s.decide([{ policy: p, key: `k${i}` }], 1);
    clock.advance(60_000);
    const running = s.sweepAsync();
    expect(s.sweep()).toBe(0); // the other sweep holds the turn
    expect(await running).toBe(95);
    expect(s.size).toBe(0);
  });

  it('eviction prefers a full bucket, then the oldest', () => {
    const { store: s, clock } = store({ maxTrackedKeys: 3, evictionSampleSize: 64 });
    s.decide([{ policy: p, key: 'a' }], 1);
    clock.advance(1_000);
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
    const both = [
      { policy: p, key: 'x' },
      { policy: q, key: 'x' },
    ];
    expect(s.decide(both, 1).allowed).toBe(true);
    expect(s.size).toBe(2);
    expect(s.peek(both, 1).outcomes.map((o) => o.remaining)).toEqual([1, 1]);
    s.decide([{ policy: p, key: 'y' }], 1);
    expect(s.size).toBeLessThanOrEqual(2);
  });

  it('refund of a missing bucket is a no-op, and refund never exceeds burst', () => {
    const { store: s } = store();
    s.refund([{ policy: p, key: 'none' }], 1);
    expect(s.size).toBe(0);
    s.decide([{ policy: p, key: 'k' }], 1);
    s.refund([{ policy: p, key: 'k' }], 5);
    expect(s.peek([{ policy: p, key: 'k' }], 1).outcomes[0]).toMatchObject({ remaining: 2, resetSeconds: 0 });
  });

  it('fills a zero-allocation decision in place', () => {
    const { store: s } = store();
    const first = s.decideOne(p, 'z', 1);
    const again = s.decideOne(p, 'z', 1, first);
    expect(again).toBe(first);
    expect(again.remaining).toBe(0);
  });
});

describe('policy count', () => {
  it('refuses a policy beyond maxPolicies with ERR_TOO_MANY_POLICIES, all or nothing', () => {
    const { store: s } = store({ maxPolicies: 2 });
    s.decide([{ policy: p, key: 'k' }], 1);
    s.decide([{ policy: q, key: 'k' }], 1);
    const extra = definePolicy({ name: 'one-too-many', quota: 1, window: 60, burst: 1 });
    let thrown: unknown;
    try {
      s.decide([{ policy: extra, key: 'k' }], 1);
    } catch (e) {
      thrown = e;
    }
    expect(thrown).toBeInstanceOf(SluiceError);
    expect(thrown).toMatchObject({ code: ErrorCode.TooManyPolicies, details: { limit: 2 } });
    const both = [
      { policy: p, key: 'aon' },
      { policy: extra, key: 'aon' },
    ];
    expect(() => s.decide(both, 1)).toThrow(/at most 2 distinct policies/);
    expect(s.peek([{ policy: p, key: 'aon' }], 1).outcomes[0].remaining).toBe(2);
    expect(s.decide([{ policy: p, key: 'other' }], 1).allowed).toBe(true);
  });
});

describe('full groups', () => {
  it('a decision with more new buckets than a group holds keeps its own, then gives way to the next key', () => {
    const { store: s, clock } = store({ maxTrackedKeys: 1 }); // one group of 8 slots
    const many = Array.from({ length: 9 }, (_, i) => ({
      policy: definePolicy({ name: `rl.g${i}`, quota: 60, window: 60, burst: 2 }),
      key: 'k',
    }));
    expect(s.decide(many, 1).allowed).toBe(true);
    // Eight buckets fit; the ninth is left unstored rather than evicting one of this decision's own.
    expect(s.size).toBe(8);
    clock.advance(10);
    s.decide([{ policy: p, key: 'next' }], 1);
    expect(s.size).toBeLessThanOrEqual(8);
    expect(s.peek([{ policy: p, key: 'next' }], 1).outcomes[0].remaining).toBe(1);
    expect(s.stats().evictions).toBeGreaterThan(0);
  });
});
