import { type DataPoint, MeterProvider, MetricReader } from '@opentelemetry/sdk-metrics';
import { describe, expect, it } from 'vitest';
import { type Decision, Limiter, ManualClock } from '../core/index.js';
import { MemoryStore } from '../memory/index.js';
import { decideWithMetrics } from '../metrics/index.js';
import { OtelMetrics, otelNames } from './otel-metrics.js';

/** A reader that collects only when asked: the SDK's manual reader, as an exporter's test uses it. */
class ManualReader extends MetricReader {
  protected override async onShutdown(): Promise<void> {}
  protected override async onForceFlush(): Promise<void> {}
}

async function points(reader: ManualReader, name: string): Promise<DataPoint<unknown>[]> {
  const { resourceMetrics, errors } = await reader.collect();
  expect(errors).toEqual([]);
  for (const scope of resourceMetrics.scopeMetrics) {
    for (const m of scope.metrics) {
      if (m.descriptor.name === name) return m.dataPoints as DataPoint<unknown>[];
    }
  }
  return [];
}

async function sum(reader: ManualReader, name: string, attrs: Record<string, string>): Promise<number> {
  const list = await points(reader, name);
  let total = 0;
  for (const p of list) {
    if (Object.entries(attrs).every(([k, v]) => p.attributes[k] === v)) total += p.value as number;
  }
  return total;
}

function setup(prefix?: string) {
  const reader = new ManualReader();
  const provider = new MeterProvider({ readers: [reader] });
  const metrics = new OtelMetrics({
    meter: provider.getMeter('test'),
    ...(prefix ? { prefix } : {}),
    maxLabelValues: 3,
  });
  const clock = new ManualClock();
  const store = new MemoryStore({ clock, sweepIntervalMs: 0, maxTrackedKeys: 32 });
  const limiter = new Limiter({
    policies: [
      { name: 'rl.public_auth', quota: 10, window: 60, burst: 2 },
      { name: 'rl.write', quota: 60, window: 60, burst: 4 },
    ],
    store,
  });
  return { reader, metrics, limiter, store, clock };
}

describe('OtelMetrics', () => {
  it('counts rejections by class exactly (the rejected-requests counter)', async () => {
    const { reader, metrics, limiter } = setup();
    const { instruments: n, attributes: a } = otelNames();
    let limited = 0;
    for (let i = 0; i < 7; i++) {
      const d = decideWithMetrics(limiter, [{ policy: 'rl.public_auth', key: 'ip:192.0.2.1' }], 1, metrics, {
        store: 'memory',
      }) as Decision;
      if (!d.allowed) limited++;
    }
    expect(limited).toBe(5);
    expect(n.rejected).toBe('sluice.ratelimit.rejected');
    expect(a.policy).toBe('sluice.ratelimit.class');
    expect(await sum(reader, n.rejected, { [a.policy]: 'rl.public_auth' })).toBe(5);
    expect(await sum(reader, n.decisions, { [a.policy]: 'rl.public_auth', [a.outcome]: 'allowed' })).toBe(2);
    expect(await sum(reader, n.decisions, { [a.policy]: 'rl.public_auth', [a.outcome]: 'limited' })).toBe(5);
    const latency = await points(reader, n.latency);
    expect((latency[0].value as { count: number }).count).toBe(7);
    // Every recorded attribute set is made of closed-set values only: no key or IP.
    const rejected = await points(reader, n.rejected);
    expect(JSON.stringify(rejected.map((p) => p.attributes))).not.toContain('192.0.2.1');
  });

  it('counts multi-policy decisions per policy with all-or-nothing outcomes', async () => {
    const { reader, metrics, limiter } = setup('acme');
    const { instruments: n, attributes: a } = otelNames('acme');
    const checks = limiter.resolve([
      { policy: 'rl.public_auth', key: 'k' },
      { policy: 'rl.write', key: 'k' },
    ]);
    for (let i = 0; i < 3; i++) metrics.recordDecision(limiter.decide(checks) as Decision, { tier: 'free' });
    expect(await sum(reader, n.decisions, { [a.policy]: 'rl.write', [a.outcome]: 'allowed' })).toBe(2);
    expect(await sum(reader, n.decisions, { [a.policy]: 'rl.write', [a.outcome]: 'denied_by_other' })).toBe(
      1,
    );
    expect(await sum(reader, n.rejected, { [a.policy]: 'rl.public_auth', [a.tier]: 'free' })).toBe(1);
    expect(await sum(reader, n.rejected, { [a.policy]: 'rl.write' })).toBe(0);
  });

  it('keeps attribute sets closed under a flood of distinct keys and label values', async () => {
    const { reader, metrics, limiter, store } = setup();
    metrics.observeStore(store);
    const { instruments: n, attributes: a } = otelNames();
    for (let i = 0; i < 3000; i++) {
      metrics.recordDecision(limiter.check('rl.write', `token:${i}`) as Decision, {
        tier: `t${i}`,
        rule: `/x/${i}`,
      });
    }
    const list = await points(reader, n.decisions);
    expect(new Set(list.map((p) => p.attributes[a.tier])).size).toBeLessThanOrEqual(4);
    expect(new Set(list.map((p) => p.attributes[a.rule])).size).toBeLessThanOrEqual(4);
    expect(list.length).toBeLessThanOrEqual(16);
    expect(await sum(reader, n.decisions, {})).toBe(3000);
    expect(await sum(reader, n.trackedKeys, { [a.store]: 'memory' })).toBe(32);
    expect(await sum(reader, n.evictions, { [a.store]: 'memory' })).toBeGreaterThan(0);
  });

  it('records exemptions, store errors, failure mode, deny cache, quota usage, alerts and webhooks', async () => {
    const { reader, metrics } = setup();
    const { instruments: n, attributes: a } = otelNames();
    metrics.recordExempt({ reason: 'client', tier: 'enterprise' });
    metrics.recordStoreError('redis');
    metrics.recordFailover('redis', 'closed', true);
    metrics.recordFailover('redis', 'closed', true);
    metrics.recordDenyCacheHit('rl.write');
    metrics.setTrackedKeys('redis', 9);
    metrics.recordEvictions('redis', 2);
    metrics.setQuotaUsage(new Map([['acme', 0.85]]));
    metrics.recordQuotaAlert(0.8);
    metrics.recordWebhook('failed');
    expect(await sum(reader, n.exempt, { [a.reason]: 'client' })).toBe(1);
    expect(await sum(reader, n.decisions, { [a.outcome]: 'exempt' })).toBe(1);
    expect(await sum(reader, n.storeErrors, { [a.store]: 'redis' })).toBe(1);
    expect(await sum(reader, n.failoverSwitches, { [a.mode]: 'closed' })).toBe(1);
    expect(await sum(reader, n.failoverActive, { [a.store]: 'redis' })).toBe(1);
    expect(await sum(reader, n.denyCacheHits, { [a.policy]: 'rl.write' })).toBe(1);
    expect(await sum(reader, n.trackedKeys, { [a.store]: 'redis' })).toBe(9);
    expect(await sum(reader, n.evictions, { [a.store]: 'redis' })).toBe(2);
    expect(await sum(reader, n.quotaUsage, { [a.tenant]: 'acme' })).toBe(0.85);
    expect(await sum(reader, n.quotaAlerts, { [a.threshold]: '0.8' })).toBe(1);
    expect(await sum(reader, n.webhook, { [a.result]: 'failed' })).toBe(1);
  });

  it('rejects a missing meter and a bad prefix', () => {
    expect(() => new OtelMetrics({} as never)).toThrow(/meter must be an OpenTelemetry Meter/);
    const meter = new MeterProvider().getMeter('x');
    expect(() => new OtelMetrics({ meter, prefix: '9x' })).toThrow(/prefix must be/);
    expect(() => new OtelMetrics({ meter, colour: 1 } as never)).toThrow(/colour/);
  });
});
