import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type PrometheusServer, startPrometheus } from '../../../test/support/prometheus-server.js';
import { promtool } from '../../../test/support/promtool.js';
import {
  client,
  send,
  startGateway,
  startUpstream,
  type TestGateway,
  type TestUpstream,
  tempDir,
} from './support.js';

/**
 * End to end: a real Prometheus (Debian package `prometheus`) scrapes a RUNNING gateway's `/metrics` while the
 * test applies load through the gateway, and the expected series come back through Prometheus's HTTP API under
 * the metric prefix of the YAML file (white label). `promtool check metrics` lints the same output. Prometheus
 * scrapes on its own schedule, so the test polls with a deadline (the one place real time passes).
 */

const tmp = tempDir();
const agent = client();
let upstream: TestUpstream;
let t: TestGateway;
let prom: PrometheusServer;

// The contract's tiers and endpoint rules, under a white-label prefix; the clock is frozen, so no bucket refills.
const YAML = (url: string) => `rateLimiting:
  enabled: true
  defaultTier: standard
  tiers:
    free: { requestsPerMinute: 60, requestsPerHour: 1000, burstLimit: 10 }
    standard: { requestsPerMinute: 300, requestsPerHour: 10000, burstLimit: 3 }
  endpoints:
    - pattern: "/api/risk/simulation/studio/*"
      limit: 2
      window: 60s
server:
  trustedProxies: [loopback]
identity:
  headers: {}
metrics: { prefix: acme_edge }
upstream: { url: "${url}" }
`;

beforeAll(async () => {
  upstream = await startUpstream();
  t = await startGateway(join(tmp.dir, 'prom.yaml'), { yaml: YAML(upstream.url) });
  const base = t.gateway.url;
  const studio = `${base}/api/risk/simulation/studio/run`;
  // Client a: 5 studio requests, the rule allows 2 (3 limited by the rule). Client b: 5 plain requests, the tier's
  // burst of 3 allows 3 (2 limited by the tier). Three exempt requests: /health twice, /.well-known/x once.
  for (let i = 0; i < 5; i++)
    await send(agent, studio, { headers: { 'x-tenant-id': 't', 'x-client-id': 'a' } });
  for (let i = 0; i < 5; i++)
    await send(agent, `${base}/x`, { headers: { 'x-tenant-id': 't', 'x-client-id': 'b' } });
  await send(agent, `${base}/health`);
  await send(agent, `${base}/health`);
  await send(agent, `${base}/.well-known/x`);
  const port = new URL(base).port;
  prom = await startPrometheus({ targets: [`127.0.0.1:${port}`] });
}, 60_000);

afterAll(async () => {
  await prom?.stop();
  await t?.gateway.close();
  await upstream?.close();
  await agent.close();
  tmp.cleanup();
});

describe('a real Prometheus scraping a running gateway', () => {
  it('finds the limited requests by policy, tier and rule under the configured prefix', async () => {
    await prom.waitFor('up{job="sluice"}', (v) => v === 1);
    const exceeded = await prom.waitFor('acme_edge_rate_limit_exceeded_total', (v) => v === 5);
    const rows = exceeded
      .map((s) => [s.metric.policy, s.metric.tier, s.metric.rule, s.value])
      .sort((x, y) => String(x[0]).localeCompare(String(y[0])));
    expect(rows).toEqual([
      ['/api/risk/simulation/studio/*', 'standard', '/api/risk/simulation/studio/*', 3],
      // Prometheus drops an empty label: no rule matched these.
      ['standard', 'standard', undefined, 2],
    ]);
    // Per policy and outcome: a request limited by one policy counts as denied_by_other for the others.
    const decisions = await prom.present(
      'sum by (policy, outcome) (acme_edge_decisions_total{outcome!="exempt"})',
    );
    const table = decisions.map((s) => `${s.metric.policy} ${s.metric.outcome} ${s.value}`).sort();
    expect(table).toEqual([
      '/api/risk/simulation/studio/* allowed 2',
      '/api/risk/simulation/studio/* limited 3',
      'standard allowed 5',
      'standard denied_by_other 3',
      'standard limited 2',
      'standard.hour allowed 5',
      'standard.hour denied_by_other 5',
    ]);
    // Exempt: the three requests above, plus every scrape of /metrics itself (counted before it is served).
    const exempt = await prom.present('sum by (reason) (acme_edge_exempt_total)');
    expect(exempt.map((s) => s.metric.reason)).toEqual(['endpoint']);
    expect(exempt[0].value).toBeGreaterThanOrEqual(4);
    const latency = await prom.present('sum(acme_edge_decision_duration_seconds_count{store="memory"})');
    expect(latency.map((s) => s.value)).toEqual([10]);
    const tracked = await prom.present('acme_edge_tracked_keys{store="memory"}');
    expect(tracked.length).toBe(1);
    expect(tracked[0].value).toBeGreaterThan(0);
    // White label: nothing of the default prefix is exposed.
    expect(await prom.query('count({__name__=~"sluice_.+"})')).toEqual([]);
    // The contract's alert expression works on the gateway's series, with our prefix (once two scrapes exist).
    await prom.waitFor('count(rate(acme_edge_rate_limit_exceeded_total[5m]) >= 0)', (v) => v === 2);
  });

  it('serves /metrics that promtool check metrics accepts', async () => {
    const text = (await send(agent, `${t.gateway.url}/metrics`)).text;
    expect(text).toContain('# TYPE acme_edge_rate_limit_exceeded_total counter');
    expect(await promtool(['check', 'metrics'], text)).toEqual({ code: 0, output: '' });
  });
});
