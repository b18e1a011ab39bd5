import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { Limiter, ManualClock } from '../core/index.js';
import { MemoryStore } from '../memory/index.js';
import { SpaceSaving } from './space-saving.js';
import { TopLimitedKeys } from './top-limited-keys.js';

describe('SpaceSaving', () => {
  it('holds every item above total/capacity and never underestimates (property)', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 12 }),
        fc.array(fc.integer({ min: 0, max: 40 }), { maxLength: 400 }),
        (k, stream) => {
          const s = new SpaceSaving<number>(k);
          const truth = new Map<number, number>();
          for (const x of stream) {
            s.offer(x);
            truth.set(x, (truth.get(x) ?? 0) + 1);
          }
          expect(s.size).toBeLessThanOrEqual(k);
          const held = new Map(s.top().map((h) => [h.item, h]));
          for (const [item, n] of truth) {
            if (n > stream.length / k) expect(held.has(item)).toBe(true);
            const h = held.get(item);
            if (h !== undefined) {
              expect(h.count).toBeGreaterThanOrEqual(n);
              expect(h.count - h.error).toBeLessThanOrEqual(n);
            }
          }
          const counts = s.top().map((h) => h.count);
          expect(counts).toEqual([...counts].sort((a, b) => b - a));
        },
      ),
      { numRuns: 200 },
    );
  });
});

describe('TopLimitedKeys', () => {
  it('lists the keys denied most as keyed hashes, bounded whatever the number of keys', () => {
    const store = new MemoryStore({ sweepIntervalMs: 0 });
    const limiter = new Limiter({ policies: [{ name: 'rl.read', quota: 1, window: 60, burst: 1 }], store });
    const top = new TopLimitedKeys({ capacity: 64, hashSecret: 'a-long-enough-secret' });
    for (let i = 0; i < 50; i++) top.recordDecision(limiter.check('rl.read', 'ip:203.0.113.9') as never);
    for (let i = 0; i < 2000; i++)
      top.recordDecision(limiter.check('rl.read', `ip:198.51.100.${i % 250}`) as never);
    const list = top.top(3);
    expect(list[0]).toEqual({ hash: top.hashKey('ip:203.0.113.9'), policy: 'rl.read', count: 49, error: 0 });
    expect(list[0].hash).toMatch(/^[0-9a-f]{16}$/);
    expect(JSON.stringify(top.top(100))).not.toContain('203.0.113');
    expect(top.top(100).length).toBeLessThanOrEqual(64);
    const other = new TopLimitedKeys({ hashSecret: 'a-long-enough-secret' });
    expect(other.hashKey('ip:203.0.113.9')).toBe(top.hashKey('ip:203.0.113.9'));
    expect(new TopLimitedKeys().hashKey('ip:203.0.113.9')).not.toBe(top.hashKey('ip:203.0.113.9'));
  });

  it('covers the current and the previous period only', () => {
    const clock = new ManualClock();
    const top = new TopLimitedKeys({ periodMs: 60_000, clock });
    top.offer('a', 'p');
    clock.advance(60_000);
    top.offer('b', 'p');
    expect(
      top
        .top()
        .map((e) => e.hash)
        .sort(),
    ).toEqual([top.hashKey('a'), top.hashKey('b')].sort());
    clock.advance(60_000);
    expect(top.top().map((e) => e.hash)).toEqual([top.hashKey('b')]);
    clock.advance(120_000);
    expect(top.top()).toEqual([]);
  });

  it('counts only enforcing policies that denied', () => {
    const store = new MemoryStore({ sweepIntervalMs: 0 });
    const limiter = new Limiter({
      policies: [
        { name: 'shadow', quota: 1, window: 60, burst: 1, shadow: true },
        { name: 'real', quota: 1, window: 60, burst: 2 },
      ],
      store,
    });
    const top = new TopLimitedKeys();
    for (let i = 0; i < 4; i++) {
      top.recordDecision(
        limiter.decide([
          { policy: 'shadow', key: 'k' },
          { policy: 'real', key: 'k' },
        ]) as never,
      );
    }
    expect(top.top()).toEqual([{ hash: top.hashKey('k'), policy: 'real', count: 2, error: 0 }]);
  });
});
