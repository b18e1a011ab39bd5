import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { RateDistribution } from './rate-distribution.js';
import { RATE_WINDOWS_MS, STEPS_MS } from './sliding-peaks.js';

const T0 = Date.UTC(2026, 11, 3, 10, 0, 0);

function peaksOf(times: readonly number[], client = 'ip:203.0.113.7') {
  const d = new RateDistribution(1000);
  for (const t of times) d.add('tier:standard', client, t);
  const g = d.groups()[0];
  return g.windows.map((w) => w.max);
}

describe('RateDistribution', () => {
  it('counts a burst across a second boundary whole: 7 requests stamped 10:00:00 and 10:00:01 are 7 in a second', () => {
    const stamped = [0, 0, 0, 1000, 1000, 1000, 1000].map((ms) => T0 + ms);
    expect(peaksOf(stamped)[0]).toBe(7);
    const ms = [800, 850, 900, 1100, 1150, 1200, 1250].map((x) => T0 + x);
    expect(peaksOf(ms)[0]).toBe(7);
    // Two seconds apart is two windows.
    expect(peaksOf([T0, T0, T0, T0 + 2000, T0 + 2000])[0]).toBe(3);
  });

  it('counts a minute across a minute boundary whole', () => {
    // One request every 2 s from 10:00:30 to 10:01:28: 30 requests within a minute, 15 in each aligned minute.
    const times = Array.from({ length: 30 }, (_, i) => T0 + 30_000 + i * 2000);
    expect(peaksOf(times)[1]).toBe(30);
  });

  it('counts at least the requests of any window, and at most those of the window and one step before it (property)', () => {
    fc.assert(
      fc.property(
        fc.array(fc.integer({ min: 0, max: 7_200_000 }), { minLength: 2, maxLength: 120 }),
        fc.constantFrom(1, 100, 1000),
        (raw, unit) => {
          const times = raw.map((t) => T0 + Math.floor(t / unit) * unit).sort((a, b) => a - b);
          const got = peaksOf(times);
          RATE_WINDOWS_MS.forEach((w, i) => {
            const within = (span: number) =>
              Math.max(...times.map((t) => times.filter((u) => u <= t && u >= t - span).length));
            expect(got[i]).toBeGreaterThanOrEqual(within(w));
            expect(got[i]).toBeLessThanOrEqual(within(w + STEPS_MS[i]));
          });
        },
      ),
      { numRuns: 200 },
    );
  });

  it('leaves clients with one request out of the peaks, and counts them', () => {
    const d = new RateDistribution(1000);
    for (let i = 0; i < 50; i++) d.add('tier:standard', `ip:10.0.0.${i}`, T0 + i);
    for (let i = 0; i < 5; i++) d.add('tier:standard', 'ip:203.0.113.7', T0 + i * 1000);
    const g = d.groups()[0];
    expect(g).toMatchObject({ requests: 55, clients: 51, oneRequest: 50, estimated: false });
    expect(g.windows[1]).toEqual({ p50: 5, p90: 5, p99: 5, max: 5 });
    expect(Array.from(g.sortedRequests[1])).toEqual([5]);
    expect(d.clients('tier:')).toEqual({ count: 51, estimated: false });
  });

  it('estimates 5,000,000 one-request clients within 2% in bounded memory, the headline as the table', () => {
    const d = new RateDistribution(200_000);
    const before = process.memoryUsage().heapUsed;
    const real = 100;
    for (let i = 0; i < 5_000_000; i++) {
      d.add('tier:standard', `ip:${(i >>> 16) & 255}.${(i >>> 8) & 255}.${i & 255}.${i >>> 24}x`, T0 + i);
      // The real clients keep coming between them and are still measured.
      if (i % 50_000 === 0) for (let c = 0; c < real; c++) d.add('tier:standard', `ip:192.0.2.${c}`, T0 + i);
    }
    const g = d.groups()[0];
    expect(g.estimated).toBe(true);
    expect(Math.abs(g.clients - 5_000_100) / 5_000_100).toBeLessThan(0.02);
    expect(d.clients('tier:')).toEqual({ count: g.clients, estimated: true });
    // Only clients with more than one request take a place in the peak table.
    expect(g.sortedPeaks[0].length).toBe(real);
    expect(d.peakBytes).toBeLessThan(1024 * 1024);
    expect(process.memoryUsage().heapUsed - before).toBeLessThan(200 * 1024 * 1024);
  }, 180_000);
});
