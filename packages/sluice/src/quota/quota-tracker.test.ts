import { describe, expect, it } from 'vitest';
import { ManualClock, SluiceError } from '../core/index.js';
import { PrometheusMetrics } from '../prometheus/index.js';
import { MemoryQuotaStore } from './memory-quota-store.js';
import { QuotaTracker } from './quota-tracker.js';
import type { QuotaAlert } from './quota-tracker-options.js';
import { bucketStart, windowBuckets } from './time-buckets.js';

const T0 = Date.UTC(2026, 0, 1, 12, 0, 0);

function tracker(options: ConstructorParameters<typeof QuotaTracker>[0] = {}) {
  const clock = new ManualClock(T0);
  const alerts: QuotaAlert[] = [];
  const lines: string[] = [];
  const q = new QuotaTracker({
    clock,
    flushIntervalMs: 0,
    log: (line) => lines.push(line),
    ...options,
  });
  q.on('alert', (a: QuotaAlert) => alerts.push(a));
  return { q, clock, alerts, lines };
}

describe('time buckets', () => {
  it('cuts wall time into aligned buckets and lists the window oldest first', () => {
    expect(bucketStart(T0 + 59_999, 60)).toBe(T0 / 1000);
    expect(bucketStart(T0 + 60_000, 60)).toBe(T0 / 1000 + 60);
    const w = windowBuckets(T0 + 30_000, 60, 300);
    expect(w).toEqual([-4, -3, -2, -1, 0].map((i) => T0 / 1000 + i * 60));
  });
});

describe('QuotaTracker (memory)', () => {
  it('tracks usage per tenant and category over the window, and the top tenants', async () => {
    const { q } = tracker({ quotas: { acme: 100, globex: 10 } });
    q.record('acme', 'read');
    q.record('acme', 'read', 4);
    q.record('acme', 'simulation', 2);
    q.record('globex', 'read', 9);
    q.record('initech', 'read');
    expect(await q.usage('acme')).toEqual({
      tenant: 'acme',
      total: 7,
      quota: 100,
      ratio: 0.07,
      categories: { read: 5, simulation: 2 },
      windowSeconds: 3600,
      bucketSeconds: 60,
    });
    expect(await q.topTenants(2)).toEqual([
      { tenant: 'globex', total: 9, quota: 10, ratio: 0.9 },
      { tenant: 'acme', total: 7, quota: 100, ratio: 0.07 },
    ]);
    expect((await q.usage('nobody')).total).toBe(0);
  });

  it('rolls buckets over with the clock: usage leaves the window one bucket at a time', async () => {
    const { q, clock } = tracker({ windowSeconds: 300, bucketSeconds: 60 });
    q.record('acme', 'read', 3); // bucket 0
    clock.advance(60_000);
    q.record('acme', 'read', 5); // bucket 1
    clock.advance(60_000 * 3 + 59_999); // still inside bucket 4: the window holds buckets 0 to 4
    expect((await q.usage('acme')).total).toBe(8);
    clock.advance(1); // bucket 5: bucket 0 leaves
    expect((await q.usage('acme')).total).toBe(5);
    clock.advance(60_000); // bucket 6: bucket 1 leaves
    expect((await q.usage('acme')).total).toBe(0);
    expect(await q.topTenants()).toEqual([]);
  });

  it('counts recorded before a bucket boundary and flushed after it land in their own bucket', async () => {
    const { q, clock } = tracker({ windowSeconds: 120, bucketSeconds: 60 });
    q.record('acme', 'read', 2);
    clock.advance(60_000);
    q.record('acme', 'read', 1);
    expect((await q.usage('acme')).total).toBe(3);
    clock.advance(60_000);
    expect((await q.usage('acme')).total).toBe(1);
  });

  it('raises each threshold once per crossing: event, log line and metric', async () => {
    const metrics = new PrometheusMetrics();
    const { q, clock, alerts, lines } = tracker({
      quotas: { acme: 10 },
      windowSeconds: 120,
      bucketSeconds: 60,
      metrics,
    });
    q.record('acme', 'read', 7);
    await q.flush();
    expect(alerts).toEqual([]);
    q.record('acme', 'read');
    await q.flush();
    expect(alerts.map((a) => a.threshold)).toEqual([0.8]);
    expect(alerts[0]).toMatchObject({
      type: 'quota.threshold_crossed',
      tenant: 'acme',
      usage: 8,
      quota: 10,
      ratio: 0.8,
    });
    expect(alerts[0].at).toBe(new Date(T0).toISOString());
    q.record('acme', 'read');
    await q.flush();
    expect(alerts).toHaveLength(1);
    q.record('acme', 'read', 5); // jumps past 100%
    await q.flush();
    q.record('acme', 'read', 5);
    await q.flush();
    expect(alerts.map((a) => a.threshold)).toEqual([0.8, 1]);
    expect(lines).toEqual([
      'quota alert: tenant="acme" crossed 80% of its quota (8/10 in 120s)',
      'quota alert: tenant="acme" crossed 100% of its quota (14/10 in 120s)',
    ]);
    const text = await metrics.metrics();
    expect(text).toContain('sluice_quota_alerts_total{threshold="0.8"} 1');
    expect(text).toContain('sluice_quota_alerts_total{threshold="1"} 1');
    expect(text).toContain('sluice_quota_usage_ratio{tenant="acme"} 1.9');
    // The window rolls past every count with no new traffic: the gauge falls and the thresholds re-arm.
    clock.advance(120_000);
    await q.flush();
    expect(await metrics.metrics()).not.toContain('sluice_quota_usage_ratio{tenant="acme"}');
    q.record('acme', 'read', 9);
    await q.flush();
    expect(alerts.map((a) => a.threshold)).toEqual([0.8, 1, 0.8]);
  });

  it('does not re-alert while usage hovers within the hysteresis below a threshold', async () => {
    const { q, clock, alerts } = tracker({
      quotas: { acme: 100 },
      windowSeconds: 120,
      bucketSeconds: 60,
      thresholds: [0.8],
    });
    q.record('acme', 'read', 50);
    clock.advance(60_000);
    q.record('acme', 'read', 30);
    await q.flush();
    expect(alerts).toHaveLength(1);
    clock.advance(60_000); // the 50 leave; 30 + 48 = 78%: within 5% of 80%, still armed off
    q.record('acme', 'read', 48);
    await q.flush();
    q.record('acme', 'read', 2);
    await q.flush();
    expect(alerts).toHaveLength(1);
  });

  it('uses a quota function and a default quota; tenants without a quota raise nothing', async () => {
    const tiers: Record<string, number> = { free: 5, standard: 50 };
    const { q, alerts } = tracker({
      quotas: (tenant) => (tenant.startsWith('f-') ? tiers.free : undefined),
      defaultQuota: 20,
    });
    q.record('f-1', 'read', 5);
    q.record('s-1', 'read', 16);
    await q.flush();
    expect(alerts.map((a) => [a.tenant, a.threshold])).toEqual([
      ['f-1', 0.8],
      ['f-1', 1],
      ['s-1', 0.8],
    ]);
    const none = tracker({ quotas: { other: 1 } });
    none.q.record('acme', 'read', 1000);
    await none.q.flush();
    expect(none.alerts).toEqual([]);
    expect((await none.q.usage('acme')).ratio).toBeUndefined();
  });

  it('bounds the tenants waiting for a flush and counts what it drops', async () => {
    const { q } = tracker({ maxPendingTenants: 2 });
    expect(q.record('a', 'x')).toBe(true);
    expect(q.record('b', 'x')).toBe(true);
    expect(q.record('a', 'y')).toBe(true);
    expect(q.record('c', 'x', 3)).toBe(false);
    expect(q.dropped).toBe(3);
    await q.flush();
    expect(q.record('c', 'x')).toBe(true);
  });

  it('bounds the tenants a memory store holds per bucket', async () => {
    const store = new MemoryQuotaStore({ maxTenantsPerBucket: 3 });
    const { q } = tracker({ store });
    for (let i = 0; i < 10; i++) q.record(`t${i}`, 'read');
    await q.flush();
    expect((await q.topTenants(100)).length).toBe(3);
    expect(store.dropped).toBe(7);
  });

  it('rejects invalid options and arguments with the option named', () => {
    expect(() => new QuotaTracker({ bucketSeconds: 7 })).toThrow(
      /bucketSeconds must be a divisor of windowSeconds/,
    );
    expect(() => new QuotaTracker({ thresholds: [1, 0.8] })).toThrow(/thresholds must be/);
    expect(() => new QuotaTracker({ quotas: { acme: -1 } })).toThrow(/quotas.acme must be/);
    expect(() => new QuotaTracker({ hysteresis: 1 })).toThrow(/hysteresis/);
    expect(() => new QuotaTracker({ windowSecs: 1 } as never)).toThrow(SluiceError);
    const { q } = tracker();
    expect(() => q.record('', 'read')).toThrow(/tenant must be/);
    expect(() => q.record('acme', 'read', 0)).toThrow(/cost must be/);
  });

  it('stops counting once closed', async () => {
    const { q } = tracker();
    q.record('acme', 'read');
    await q.close();
    expect(q.record('acme', 'read')).toBe(false);
  });
});
