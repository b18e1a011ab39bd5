import fc from 'fast-check';
import { Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { type Decision, Limiter, ManualClock, SluiceError } from '../core/index.js';
import { MemoryStore } from '../memory/index.js';
import { decideWithMetrics } from '../metrics/index.js';
import { prometheusMetricNames } from './prometheus-metric-names.js';
import { PrometheusMetrics } from './prometheus-metrics.js';

type Json = Awaited<ReturnType<Registry['getMetricsAsJSON']>>;

function value(json: Json, name: string, labels: Record<string, string>): number {
  const m = json.find((x) => x.name === name);
  if (m === undefined) throw new Error(`no metric ${name}`);
  const v = (
    m.values as { labels: Record<string, string | number>; value: number; metricName?: string }[]
  ).find(
    (x) =>
      ((x as { metricName?: string }).metricName ?? name) === name &&
      Object.entries(labels).every(([k, l]) => String(x.labels[k]) === l),
  );
  return v?.value ?? 0;
}

function series(json: Json, name: string): Record<string, string | number>[] {
  const m = json.find((x) => x.name === name);
  return (m?.values ?? []).map((v) => v.labels as Record<string, string | number>);
}

function setup(options: ConstructorParameters<typeof PrometheusMetrics>[0] = {}) {
  const clock = new ManualClock();
  const store = new MemoryStore({ clock, sweepIntervalMs: 0, maxTrackedKeys: 64 });
  const limiter = new Limiter({
    policies: [
      { name: 'rl.write', quota: 60, window: 60, burst: 3 },
      { name: 'rl.burst', quota: 600, window: 60, burst: 5 },
      { name: 'rl.trial', quota: 60, window: 60, burst: 1, shadow: true },
    ],
    store,
  });
  const metrics = new PrometheusMetrics(options);
  return { clock, store, limiter, metrics };
}

describe('PrometheusMetrics', () => {
  it('counts every decision exactly, per policy and outcome', async () => {
    const { limiter, metrics } = setup();
    const labels = { tier: 'standard', rule: '/api/*', store: 'memory' };
    const checks = limiter.resolve([
      { policy: 'rl.write', key: 'user:1' },
      { policy: 'rl.burst', key: 'user:1' },
      { policy: 'rl.trial', key: 'user:1' },
    ]);
    const decisions: Decision[] = [];
    for (let i = 0; i < 5; i++)
      decisions.push(decideWithMetrics(limiter, checks, 1, metrics, labels) as Decision);
    expect(decisions.map((d) => d.allowed)).toEqual([true, true, true, false, false]);
    const n = metrics.names;
    const json = await metrics.registry.getMetricsAsJSON();
    const base = { tier: 'standard', rule: '/api/*' };
    expect(value(json, n.decisions, { ...base, policy: 'rl.write', outcome: 'allowed' })).toBe(3);
    expect(value(json, n.decisions, { ...base, policy: 'rl.write', outcome: 'limited' })).toBe(2);
    expect(value(json, n.decisions, { ...base, policy: 'rl.burst', outcome: 'allowed' })).toBe(3);
    expect(value(json, n.decisions, { ...base, policy: 'rl.burst', outcome: 'denied_by_other' })).toBe(2);
    // The shadow policy (burst 1) would have denied from the second request on, whatever the others said.
    expect(value(json, n.decisions, { ...base, policy: 'rl.trial', outcome: 'allowed' })).toBe(1);
    expect(value(json, n.decisions, { ...base, policy: 'rl.trial', outcome: 'shadow_limited' })).toBe(4);
    expect(value(json, n.exceeded, { ...base, policy: 'rl.write' })).toBe(2);
    expect(series(json, n.exceeded)).toHaveLength(1);
    const latency = json.find((m) => m.name === n.latency)!;
    const count = latency.values.find(
      (v) => (v as { metricName?: string }).metricName === `${n.latency}_count`,
    );
    expect(count?.value).toBe(5);
  });

  it('counts every decision exactly under any sequence (property)', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(
          fc.record({ key: fc.integer({ min: 0, max: 3 }), advance: fc.integer({ min: 0, max: 3000 }) }),
          {
            maxLength: 60,
          },
        ),
        async (steps) => {
          const { clock, limiter, metrics } = setup();
          let allowed = 0;
          let limited = 0;
          for (const s of steps) {
            clock.advance(s.advance);
            const d = decideWithMetrics(
              limiter,
              [{ policy: 'rl.write', key: `k${s.key}` }],
              1,
              metrics,
            ) as Decision;
            if (d.allowed) allowed++;
            else limited++;
          }
          const json = await metrics.registry.getMetricsAsJSON();
          const n = metrics.names;
          expect(value(json, n.decisions, { policy: 'rl.write', outcome: 'allowed' })).toBe(allowed);
          expect(value(json, n.decisions, { policy: 'rl.write', outcome: 'limited' })).toBe(limited);
          expect(value(json, n.exceeded, { policy: 'rl.write' })).toBe(limited);
        },
      ),
      { numRuns: 40 },
    );
  });

  it('keeps label sets closed under a flood of distinct keys and label values', async () => {
    const { limiter, metrics, store } = setup({ tiers: ['free', 'standard'], maxLabelValues: 4 });
    metrics.observeStore(store);
    const before = await metrics.metrics();
    for (let i = 0; i < 5000; i++) {
      const d = limiter.check('rl.write', `ip:10.0.${i >> 8}.${i & 255}`);
      // A caller that wrongly passes request data as tier or rule still cannot add series.
      metrics.recordDecision(d as Decision, { tier: `tier-${i}`, rule: `/r/${i}`, store: `s${i}` }, 0.00001);
    }
    const json = await metrics.registry.getMetricsAsJSON();
    const text = await metrics.metrics();
    expect(text).not.toContain('ip:10.0');
    const decisions = series(json, metrics.names.decisions);
    expect(new Set(decisions.map((l) => l.tier))).toEqual(new Set(['other']));
    // Rules have no allow-list: the first four values are admitted, the rest fold into `other`.
    expect(new Set(decisions.map((l) => l.rule)).size).toBeLessThanOrEqual(5);
    expect(decisions.length).toBeLessThanOrEqual(5 * 2);
    const stores = new Set(
      (json.find((m) => m.name === metrics.names.latency)?.values ?? []).map((v) => String(v.labels.store)),
    );
    expect(stores.size).toBeLessThanOrEqual(33);
    expect(text.split('\n').length).toBeLessThan(before.split('\n').length + 1000);
    expect(value(json, metrics.names.trackedKeys, { store: 'memory' })).toBe(64);
    expect(value(json, metrics.names.evictions, { store: 'memory' })).toBeGreaterThan(0);
  });

  it('records exemptions, store errors, failure mode switches, deny cache hits, quota usage and alerts', async () => {
    const metrics = new PrometheusMetrics({ prefix: 'acme', maxTenantSeries: 2 });
    const n = prometheusMetricNames('acme');
    metrics.recordExempt({ reason: 'endpoint', rule: '/health' });
    metrics.recordExempt({ reason: 'client' });
    metrics.recordStoreError('redis');
    metrics.recordStoreError('redis');
    metrics.recordFailover('redis', 'open', true);
    metrics.recordFailover('redis', 'open', true);
    metrics.recordFailover('redis', 'open', false);
    metrics.recordFailover('redis', 'open', true);
    metrics.recordFailover('redis', 'local', true);
    metrics.recordFailover('redis', 'sideways' as never, true);
    metrics.recordDenyCacheHit('rl.write', { tier: 'free' });
    metrics.setTrackedKeys('redis', 12);
    metrics.recordEvictions('redis', 3);
    metrics.setQuotaUsage(
      new Map([
        ['acme', 0.5],
        ['globex', 0.95],
        ['initech', 0.1],
      ]),
    );
    metrics.recordQuotaAlert(0.8);
    metrics.recordWebhook('delivered');
    metrics.recordWebhook('retried');
    const json = await metrics.registry.getMetricsAsJSON();
    expect(value(json, n.exempt, { reason: 'endpoint', rule: '/health' })).toBe(1);
    expect(value(json, n.decisions, { policy: '', rule: '/health', outcome: 'exempt' })).toBe(1);
    expect(value(json, n.decisions, { policy: '', rule: '', outcome: 'exempt' })).toBe(1);
    expect(value(json, n.storeErrors, { store: 'redis' })).toBe(2);
    expect(value(json, n.failoverSwitches, { store: 'redis', mode: 'open' })).toBe(2);
    expect(value(json, n.failoverActive, { store: 'redis', mode: 'open' })).toBe(1);
    expect(value(json, n.failoverActive, { store: 'redis', mode: 'local' })).toBe(1);
    expect(series(json, n.failoverActive).map((l) => l.mode)).toEqual(['open', 'local', 'other']);
    expect(value(json, n.denyCacheHits, { policy: 'rl.write', tier: 'free' })).toBe(1);
    expect(value(json, n.trackedKeys, { store: 'redis' })).toBe(12);
    expect(value(json, n.evictions, { store: 'redis' })).toBe(3);
    expect(series(json, n.quotaUsage).map((l) => l.tenant)).toEqual(['globex', 'acme']);
    expect(value(json, n.quotaAlerts, { threshold: '0.8' })).toBe(1);
    expect(value(json, n.webhook, { result: 'retried' })).toBe(1);
    metrics.setQuotaUsage(new Map([['initech', 0.2]]));
    const after = await metrics.registry.getMetricsAsJSON();
    expect(series(after, n.quotaUsage).map((l) => l.tenant)).toEqual(['initech']);
  });

  it('records a store failure as failed_open or failed_closed when the decision has no outcomes', async () => {
    const metrics = new PrometheusMetrics();
    const failed = (allowed: boolean): Decision => ({
      allowed,
      reason: allowed ? 'store_unavailable_open' : 'store_unavailable',
      cost: 1,
      retryAfterSeconds: allowed ? 0 : 1,
      delayMs: 0,
      outcomes: [],
      violated: [],
    });
    metrics.recordDecision(failed(true));
    metrics.recordDecision(failed(false));
    const json = await metrics.registry.getMetricsAsJSON();
    expect(value(json, metrics.names.decisions, { outcome: 'failed_open' })).toBe(1);
    expect(value(json, metrics.names.decisions, { outcome: 'failed_closed' })).toBe(1);
  });

  it('rejects invalid options with the option named', () => {
    expect(() => new PrometheusMetrics({ prefix: 'bad-prefix' })).toThrow(/prefix must be/);
    expect(() => new PrometheusMetrics({ latencyBuckets: [0.1, 0.05] })).toThrow(/latencyBuckets/);
    expect(() => new PrometheusMetrics({ tiers: 'free' as never })).toThrow(/tiers must be/);
    expect(() => new PrometheusMetrics({ prefx: 'x' } as never)).toThrow(SluiceError);
    expect(() => new PrometheusMetrics({ maxLabelValues: 0 })).toThrow(/maxLabelValues/);
  });

  it('adds prom-client process metrics with the same prefix only when asked', async () => {
    expect(await new PrometheusMetrics({ prefix: 'edge' }).metrics()).not.toContain('edge_process_');
    const text = await new PrometheusMetrics({ prefix: 'edge', processMetrics: true }).metrics();
    expect(text).toContain('edge_process_cpu_user_seconds_total');
  });

  it('uses the registry it is given', async () => {
    const registry = new Registry();
    const metrics = new PrometheusMetrics({ registry, prefix: 'edge' });
    expect(metrics.registry).toBe(registry);
    expect(await registry.metrics()).toContain('edge_rate_limit_exceeded_total');
  });
});
