import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { definePolicy, refill, remainingTokens, retryAfterSeconds, secondsUntilFull } from './index.js';

describe('bucket arithmetic', () => {
  const p = definePolicy({ name: 'rl.write', quota: 120, window: 60, burst: 30 });

  it('gives r=29, t=1 after one request at 120 per minute, burst 30', () => {
    const units = p.capacityUnits - p.unitsPerToken;
    expect(remainingTokens(p, units)).toBe(29);
    expect(secondsUntilFull(p, units)).toBe(1);
  });

  it('reports t = 0 only when full and Retry-After at least 1', () => {
    expect(secondsUntilFull(p, p.capacityUnits)).toBe(0);
    expect(secondsUntilFull(p, p.capacityUnits - 1)).toBe(1);
    expect(retryAfterSeconds(p, p.unitsPerToken, 1)).toBe(1);
    expect(retryAfterSeconds(p, 0, 1)).toBe(1); // 0.5 s rounds up to 1
  });

  it('clamps negative elapsed time and debt shows no negative remaining', () => {
    expect(refill(p, 5, -1000)).toBe(5);
    expect(remainingTokens(p, -p.unitsPerToken)).toBe(0);
  });

  it('does not drift: a million 1 ms refills equal one refill of a million ms', () => {
    const slow = definePolicy({ name: 'slow', quota: 7, window: 3600, burst: 10_000 });
    let a = 0;
    for (let i = 0; i < 1_000_000; i++) a = refill(slow, a, 1);
    expect(a).toBe(refill(slow, 0, 1_000_000));
    expect(a).toBe(7_000_000); // 7 units per ms, exactly
    expect(remainingTokens(slow, a)).toBe(Math.floor(7_000_000 / 3_600_000));
  });

  it('rounds r down and t up for any policy and state (property)', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 100_000 }),
        fc.integer({ min: 1, max: 86_400 }),
        fc.integer({ min: 1, max: 10_000 }),
        fc.double({ min: 0, max: 1, noNaN: true }),
        (quota, window, burst, fill) => {
          const q = definePolicy({ name: 'q', quota, window, burst });
          const units = Math.floor(q.capacityUnits * fill);
          const tokens = units / q.unitsPerToken;
          const r = remainingTokens(q, units);
          const t = secondsUntilFull(q, units);
          expect(r).toBe(Math.floor(tokens + 1e-12));
          expect(r).toBeLessThanOrEqual(tokens);
          expect(r + 1).toBeGreaterThan(tokens);
          const seconds = (q.capacityUnits - units) / q.refillPerSecond;
          expect(t).toBeGreaterThanOrEqual(seconds);
          expect(t - 1).toBeLessThan(seconds);
        },
      ),
    );
  });
});
