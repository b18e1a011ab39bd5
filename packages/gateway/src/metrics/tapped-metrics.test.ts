import { definePolicy, Limiter, ManualClock } from 'sluice';
import { MemoryStore } from 'sluice/memory';
import { NoopMetrics } from 'sluice/metrics';
import { describe, expect, it } from 'vitest';
import { RateWindow } from '../dashboard/rate-window.js';
import { TappedMetrics } from './tapped-metrics.js';

describe('TappedMetrics', () => {
  it('counts in Prometheus and hands every call to its sinks, even past a sink that throws', async () => {
    const clock = new ManualClock(0);
    const rates = new RateWindow({ clock });
    class Broken extends NoopMetrics {
      override recordDecision(): void {
        throw new Error('broken sink');
      }
    }
    const metrics = new TappedMetrics([new Broken(), rates], { prefix: 'acme' });
    const policy = definePolicy({ name: 'free', quota: 60, window: 60, burst: 1 });
    const limiter = new Limiter({
      policies: [policy],
      store: new MemoryStore({ clock, sweepIntervalMs: 0 }),
    });
    for (let i = 0; i < 2; i++)
      metrics.recordDecision(await limiter.decide([{ policy, key: 'k' }], 1), { tier: 'free' });
    metrics.recordExempt({ reason: 'endpoint' });
    metrics.recordFailover('redis', 'open', true);
    const text = await metrics.metrics();
    expect(text).toContain('acme_decisions_total{policy="free",tier="free",rule="",outcome="allowed"} 1');
    expect(text).toContain('acme_rate_limit_exceeded_total{policy="free",tier="free",rule=""} 1');
    expect(text).toContain('acme_store_failure_mode_active{store="redis",mode="open"} 1');
    clock.advance(1000);
    const requests = rates.series().find((s) => s.kind === 'requests' && s.tier === 'free')!;
    expect(rates.rowsAfter(Number.NEGATIVE_INFINITY)[0].v[requests.id]).toEqual([1, 1, 0]);
    expect(rates.failoverActive).toBe(true);
  });
});
