import fc from 'fast-check';
import { definePolicy, Limiter, ManualClock } from 'sluice';
import { MemoryStore } from 'sluice/memory';
import { describe, expect, it } from 'vitest';
import type { RateRow, SeriesInfo } from './dashboard-frame.js';
import { RateWindow } from './rate-window.js';

const WALL = 1_701_936_000_000;

function setup(history = 60) {
  const clock = new ManualClock(5_000_000);
  const rates = new RateWindow({ clock, historySeconds: history, wallNow: () => WALL });
  const minute = definePolicy({ name: 'standard', quota: 60, window: 60, burst: 2 });
  const rule = definePolicy({ name: '/api/*', quota: 60, window: 60, burst: 1 });
  const limiter = new Limiter({
    policies: [minute, rule],
    store: new MemoryStore({ clock, sweepIntervalMs: 0 }),
  });
  return { clock, rates, minute, rule, limiter };
}

const idOf = (series: SeriesInfo[], kind: string, name: string, tier: string) =>
  series.find((s) => s.kind === kind && s.name === name && s.tier === tier)?.id;

const sum = (rows: RateRow[], id: number | undefined, channel: number) =>
  rows.reduce((n, r) => n + (id === undefined ? 0 : (r.v[id]?.[channel] ?? 0)), 0);

describe('RateWindow', () => {
  it('counts requests by tier and policies by outcome, per completed second', async () => {
    const { clock, rates, minute, rule, limiter } = setup();
    for (let i = 0; i < 3; i++) {
      const d = await limiter.decide(
        [
          { policy: minute, key: 'ip:1' },
          { policy: rule, key: 'ip:1' },
        ],
        1,
      );
      rates.recordDecision(d, { tier: 'standard', rule: '/api/*' });
    }
    rates.recordExempt({ reason: 'endpoint' });
    expect(rates.rowsAfter(-Infinity)).toEqual([]); // the second is still counting
    clock.advance(1000);
    const rows = rates.rowsAfter(-Infinity);
    expect(rows).toHaveLength(1);
    expect(rows[0].t).toBe(WALL / 1000);
    const s = rates.series();
    // Request 1 allowed; request 2 limited by the rule (burst 1), so the minute policy was denied by it.
    expect(sum(rows, idOf(s, 'requests', '', 'standard'), 0)).toBe(1);
    expect(sum(rows, idOf(s, 'requests', '', 'standard'), 1)).toBe(2);
    expect(sum(rows, idOf(s, 'requests', '', ''), 2)).toBe(1);
    expect(sum(rows, idOf(s, 'exempt', 'endpoint', ''), 0)).toBe(1);
    expect(rows[0].v[idOf(s, 'policy', '/api/*', 'standard') as number]).toEqual([1, 2, 0]);
    // Request 3 finds the minute bucket (burst 2) still holding one token: denied by the rule, not limited.
    expect(rows[0].v[idOf(s, 'policy', 'standard', 'standard') as number]).toEqual([1, 0, 2]);
  });

  it('counts a decision without a tier under its policy only (a failed credential charge)', async () => {
    const { clock, rates, minute, limiter } = setup();
    rates.recordDecision(await limiter.decide([{ policy: minute, key: 'ip:2' }], 1), { store: 'memory' });
    clock.advance(1000);
    const s = rates.series();
    expect(s.map((x) => x.kind)).toEqual(['policy']);
    expect(rates.rowsAfter(-Infinity)[0].v[0]).toEqual([1, 0, 0]);
  });

  it('reads a SingleDecision without building its outcome list', () => {
    const { clock, rates, minute } = setup();
    const store = new MemoryStore({ clock, sweepIntervalMs: 0 });
    for (let i = 0; i < 3; i++) rates.recordDecision(store.decideOne(minute, 'k', 1), { tier: 'free' });
    clock.advance(1000);
    const s = rates.series();
    expect(rates.rowsAfter(-Infinity)[0].v[idOf(s, 'policy', 'standard', 'free') as number]).toEqual([
      2, 1, 0,
    ]);
  });

  it('counts a request refused by a run-time block as a denied request of its tier', () => {
    const { clock, rates } = setup();
    rates.recordBlocked('free');
    rates.recordBlocked(undefined);
    clock.advance(1000);
    const rows = rates.rowsAfter(-Infinity);
    const s = rates.series();
    expect(sum(rows, idOf(s, 'requests', '', 'free'), 1)).toBe(1);
    expect(sum(rows, idOf(s, 'requests', '', ''), 1)).toBe(1);
  });

  it('counts store trouble and the failover state', () => {
    const { clock, rates } = setup();
    rates.recordStoreError('redis');
    rates.recordStoreError('redis');
    const failedOpen = {
      allowed: true,
      reason: 'store_unavailable_open',
      outcomes: [],
      violated: [],
    } as never;
    rates.recordDecision(failedOpen, { tier: 'free', store: 'redis' });
    rates.recordFailover('redis', 'open', true);
    expect(rates.failoverActive).toBe(true);
    clock.advance(1000);
    const s = rates.series();
    expect(rates.rowsAfter(-Infinity)[0].v[idOf(s, 'store', 'redis', '') as number]).toEqual([2, 1, 0]);
    rates.recordFailover('redis', 'open', false);
    expect(rates.failoverActive).toBe(false);
  });

  it('keeps only the history and clears seconds that passed without traffic', () => {
    const { clock, rates } = setup(10);
    rates.recordExempt({ reason: 'tier', tier: 'enterprise' });
    clock.advance(3000);
    rates.recordExempt({ reason: 'tier', tier: 'enterprise' });
    clock.advance(1000);
    const rows = rates.rowsAfter(-Infinity);
    expect(rows.map((r) => r.t - WALL / 1000)).toEqual([0, 1, 2, 3]);
    expect(rows.map((r) => Object.keys(r.v).length)).toEqual([2, 0, 0, 2]);
    // Ten seconds later the ring has wrapped: the old counts are gone, never read back as new ones.
    clock.advance(10_000);
    const later = rates.rowsAfter(-Infinity);
    expect(later).toHaveLength(9);
    expect(later.every((r) => Object.keys(r.v).length === 0)).toBe(true);
    expect(rates.rowsAfter(rates.lastCompleted() - 1)).toHaveLength(1);
  });

  it('bounds the series: combinations past the cap share an (other) series', () => {
    const clock = new ManualClock(0);
    const rates = new RateWindow({ clock, maxSeries: 3 });
    for (const reason of ['a', 'b', 'c', 'd', 'e']) rates.recordExempt({ reason });
    expect(rates.series().map((s) => `${s.kind}:${s.name}`)).toEqual([
      'requests:',
      'exempt:a',
      'exempt:b',
      'exempt:(other)',
    ]);
  });

  it('rejects invalid options with the option named', () => {
    expect(() => new RateWindow({ historySeconds: 5 })).toThrow(/historySeconds/);
    expect(() => new RateWindow({ bogus: 1 } as never)).toThrow(/bogus/);
  });

  it('property: per-second totals equal what was recorded in that second, whatever the gaps', () => {
    fc.assert(
      fc.property(
        fc.array(fc.record({ gap: fc.integer({ min: 0, max: 2500 }), n: fc.integer({ min: 0, max: 5 }) }), {
          maxLength: 40,
        }),
        (steps) => {
          const clock = new ManualClock(0);
          const rates = new RateWindow({ clock, historySeconds: 30, wallNow: () => 0 });
          const expected = new Map<number, number>();
          for (const { gap, n } of steps) {
            clock.advance(gap);
            const sec = Math.floor(clock.now() / 1000);
            for (let i = 0; i < n; i++) rates.recordExempt({ reason: 'endpoint', tier: 't' });
            expected.set(sec, (expected.get(sec) ?? 0) + n);
          }
          clock.advance(1000);
          const last = rates.lastCompleted();
          for (const row of rates.rowsAfter(-Infinity)) {
            const want = row.t > last - 30 ? (expected.get(row.t) ?? 0) : 0;
            expect(row.v[0]?.[2] ?? 0).toBe(want);
          }
        },
      ),
    );
  });

  it('holds back settleSeconds completed seconds from readers', () => {
    const clock = new ManualClock(10_000);
    const rates = new RateWindow({ clock, wallNow: () => clock.now(), settleSeconds: 2 });
    rates.recordExempt({ reason: 'tier', tier: 't' });
    clock.advance(1000);
    expect(rates.rowsAfter(-Infinity)).toEqual([]);
    clock.advance(2000);
    expect(rates.rowsAfter(-Infinity).map((r) => r.t)).toEqual([10]);
    expect(() => new RateWindow({ settleSeconds: 11 })).toThrow(/settleSeconds/);
  });

  it('property: windows of several threads on one clock merge into the sum of their seconds, each once', () => {
    const kinds = ['a', 'b', 'c'] as const;
    fc.assert(
      fc.property(
        fc.array(
          fc.record({
            gap: fc.integer({ min: 0, max: 1500 }),
            thread: fc.integer({ min: 0, max: 2 }),
            reason: fc.constantFrom(...kinds),
            n: fc.integer({ min: 0, max: 4 }),
            ship: fc.boolean(),
          }),
          { maxLength: 40 },
        ),
        (steps) => {
          const clock = new ManualClock(1_000_000);
          const opts = { clock, historySeconds: 60, wallNow: () => clock.now() };
          // Thread 0 serves the dashboard; threads 1 and 2 ship to it; `all` records everything in one window.
          const first = new RateWindow({ ...opts, settleSeconds: 2 });
          const others = [new RateWindow(opts), new RateWindow(opts)];
          const all = new RateWindow(opts);
          const windows = [first, ...others];
          const shipAll = () => {
            for (const [i, w] of others.entries()) first.merge(i + 1, w.ship());
          };
          for (const { gap, thread, reason, n, ship } of steps) {
            clock.advance(gap);
            for (let i = 0; i < n; i++) {
              windows[thread].recordExempt({ reason, tier: 't' });
              all.recordExempt({ reason, tier: 't' });
            }
            if (ship) shipAll();
          }
          clock.advance(1000);
          shipAll();
          clock.advance(2000); // past the settling seconds
          const last = first.lastCompleted();
          const totals = (w: RateWindow) => {
            const names = new Map(w.series().map((x) => [x.id, `${x.kind}:${x.name}:${x.tier}`]));
            return w.rowsAfter(-Infinity, last).map((r) => ({
              t: r.t,
              v: Object.fromEntries(Object.entries(r.v).map(([id, c]) => [names.get(Number(id)), c])),
            }));
          };
          expect(totals(first)).toEqual(totals(all));
        },
      ),
    );
  });
});
