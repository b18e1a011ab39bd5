import { Limiter } from 'sluice';
import { MemoryStore } from 'sluice/memory';
import { PrometheusMetrics } from 'sluice/prometheus';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type MeteredServer, startMeteredServer } from '../support/metered-server.js';
import { type PrometheusServer, startPrometheus } from '../support/prometheus-server.js';

/**
 * End to end: a real Prometheus scrapes a running server that decides through the engine and serves the sink's
 * registry, and the expected series come back through Prometheus's HTTP API. This is the one test that waits for
 * real time (Prometheus scrapes every second on its own schedule); it polls with a deadline.
 */
describe('a real Prometheus scraping /metrics', () => {
  let app: MeteredServer;
  let prom: PrometheusServer;
  let store: MemoryStore;

  beforeAll(async () => {
    store = new MemoryStore({ sweepIntervalMs: 0 });
    const limiter = new Limiter({
      policies: [{ name: 'rl.write', quota: 1, window: 3600, burst: 3 }],
      store,
    });
    const metrics = new PrometheusMetrics({ tiers: ['free', 'standard'] });
    metrics.observeStore(store);
    app = await startMeteredServer({
      limiter,
      metrics,
      policy: 'rl.write',
      exempt: ['/health'],
      labels: { tier: 'free', rule: '/api/*' },
    });
    for (let i = 0; i < 8; i++) await fetch(`${app.url}/api/x`, { headers: { 'x-client': 'a' } });
    for (let i = 0; i < 2; i++) await fetch(`${app.url}/api/x`, { headers: { 'x-client': 'b' } });
    await fetch(`${app.url}/health`);
    metrics.setQuotaUsage(new Map([['acme', 0.85]]));
    prom = await startPrometheus({
      targets: [app.target],
      ruleFiles: ['deploy/prometheus/rules/rate-limiting.yaml'],
    });
  }, 60_000);

  afterAll(async () => {
    await prom?.stop();
    await app?.close();
    await store?.close();
  });

  it('scrapes the exact counts of the decisions', async () => {
    await prom.waitFor('up{job="sluice"}', (v) => v === 1);
    const exceeded = await prom.waitFor('sluice_rate_limit_exceeded_total', (v) => v === 5);
    expect(exceeded).toHaveLength(1);
    expect(exceeded[0].metric).toMatchObject({
      policy: 'rl.write',
      tier: 'free',
      rule: '/api/*',
      job: 'sluice',
    });
    const allowed = await prom.present('sluice_decisions_total{outcome="allowed"}');
    expect(allowed.map((s) => s.value)).toEqual([5]);
    const exempt = await prom.present('sluice_decisions_total{outcome="exempt"}');
    expect(exempt.map((s) => [s.metric.rule, s.value])).toEqual([['/health', 1]]);
    const tracked = await prom.present('sluice_tracked_keys{store="memory"}');
    expect(tracked.map((s) => s.value)).toEqual([2]);
    const latency = await prom.present('sluice_decision_duration_seconds_count{store="memory"}');
    expect(latency.map((s) => s.value)).toEqual([10]);
    const quota = await prom.present('sluice_quota_usage_ratio');
    expect(quota.map((s) => [s.metric.tenant, s.value])).toEqual([['acme', 0.85]]);
  });

  it('loads the alert rules and evaluates them on the scraped series', async () => {
    const data = await prom.api<{ groups: { name: string; rules: { name: string; health: string }[] }[] }>(
      '/api/v1/rules',
    );
    const group = data.groups.find((g) => g.name === 'rate_limiting');
    expect(group?.rules.map((r) => r.name)).toEqual([
      'HighRateLimitExceeded',
      'TenantNearQuota',
      'TenantQuotaExhausted',
      'RateLimitStoreFailureModeActive',
    ]);
    // The tenant at 85% makes TenantNearQuota pending (its `for` is 5 minutes) once the rule has been evaluated.
    const alerts = await prom.waitFor('ALERTS{alertname="TenantNearQuota"}', (v) => v === 1);
    expect(alerts[0].metric).toMatchObject({ alertstate: 'pending', tenant: 'acme' });
    const health = group?.rules.map((r) => r.health);
    expect(health?.every((h) => h === 'ok' || h === 'unknown')).toBe(true);
  });
});
