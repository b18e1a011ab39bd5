import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type PrometheusServer, startPrometheus } from '../../../test/support/prometheus-server.js';
import { type RedisServer, startRedisServer } from '../../../test/support/redis-server.js';
import { observeStore } from '../src/store/observe-store.js';
import {
  client,
  type Reply,
  send,
  startGateway,
  startUpstream,
  type TestGateway,
  type TestUpstream,
  tempDir,
} from './support.js';

/**
 * End to end: a gateway on a real redis-server with failure mode `local`, scraped by a real Prometheus (Debian
 * package `prometheus`) that loads the shipped alert rules (a copy with this test's metric prefix and a 2 s
 * `for:`). Redis is killed: the gateway keeps deciding locally with clean headers and bodies, logs the switch,
 * and `RateLimitStoreFailureModeActive` goes pending then firing; Redis comes back: decisions return to Redis,
 * the switch back is logged, the alert resolves. Prometheus works on its own schedule, so waits poll with a
 * deadline; nothing asserts on wall time.
 */

const RULES = join(import.meta.dirname, '../../../deploy/prometheus/rules/rate-limiting.yaml');
const ALERT = 'RateLimitStoreFailureModeActive';
const tmp = tempDir();
const agent = client();
let upstream: TestUpstream;
let redis: RedisServer;
let t: TestGateway;
let prom: PrometheusServer;

const YAML = `rateLimiting:
  defaultTier: free
  tiers:
    free: { requestsPerMinute: 60, burstLimit: 2 }
store:
  type: redis
  url: \${REDIS_URL}
  failureMode: local
  nodeCount: \${REPLICAS}
  timeout: 200ms
keys: { prefix: "outage-e2e:" }
metrics: { prefix: edge }
`;

/** The shipped rules with this test's prefix and a short `for:` on the store alert (the rest as shipped). */
function testRules(): string {
  const shipped = readFileSync(RULES, 'utf8');
  const at = shipped.indexOf(`alert: ${ALERT}`);
  expect(at, `${ALERT} in ${RULES}`).toBeGreaterThan(0);
  const head = shipped.slice(0, at);
  const rule = shipped.slice(at).replace(/for: \S+/, 'for: 2s');
  const file = join(tmp.dir, 'rate-limiting.yaml');
  writeFileSync(file, `${head}${rule}`.replaceAll('sluice_', 'edge_'));
  return file;
}

interface Alert {
  readonly labels: Record<string, string>;
  readonly state: 'pending' | 'firing' | 'inactive';
}

async function alertStates(): Promise<string[]> {
  const data = await prom.api<{ alerts: Alert[] }>('/api/v1/alerts');
  return data.alerts.filter((a) => a.labels.alertname === ALERT).map((a) => a.state);
}

/** Polls `check` (sending one request through the gateway each time, so that the breaker gets to probe). */
async function whileServing(check: () => Promise<boolean>, what: string, timeoutMs = 15_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    await send(agent, `${t.gateway.url}/x`);
    if (await check()) return;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** Every number of a rate-limit answer is a whole number: Retry-After, RateLimit r and t, the problem body. */
function expectCleanDenial(reply: Reply): void {
  expect(reply.status).toBe(429);
  expect(String(reply.headers['retry-after'])).toMatch(/^[1-9][0-9]*$/);
  expect(String(reply.headers.ratelimit)).toMatch(/^"free";r=[0-9]+;t=[0-9]+$/);
  expect(reply.text).not.toMatch(/NaN|null/);
  const body = reply.json<Record<string, unknown>>();
  for (const field of ['limit', 'remaining', 'reset', 'retryAfter']) {
    expect(Number.isInteger(body[field]), `${field} = ${String(body[field])}`).toBe(true);
  }
  expect(body.retryAfter).toBe(Number(reply.headers['retry-after']));
}

beforeAll(async () => {
  upstream = await startUpstream();
  redis = await startRedisServer();
  t = await startGateway(join(tmp.dir, 'outage.yaml'), {
    yaml: YAML,
    env: { REDIS_URL: redis.url, REPLICAS: '1' },
    overrides: { upstream: upstream.url },
  });
  // What the Gateway constructor does; a second call changes nothing.
  observeStore(t.gateway.metrics, t.gateway.store, t.gateway.logger);
  prom = await startPrometheus({ targets: [new URL(t.gateway.url).host], ruleFiles: [testRules()] });
}, 60_000);

afterAll(async () => {
  await prom?.stop();
  await t?.gateway.close();
  await upstream?.close();
  await agent.close();
  await redis?.stop();
  tmp.cleanup();
});

describe('a Redis outage, as Prometheus and the logs see it', () => {
  it('fires RateLimitStoreFailureModeActive while Redis is down and resolves it after Redis returns', async () => {
    const gauge = 'edge_store_failure_mode_active{store="redis",mode="local"}';
    await prom.waitFor(gauge, (v) => v === 0);
    expect(await alertStates()).toEqual([]);
    const warnings = () =>
      t.logs.lines.filter((l) => l.level === 40 && String(l.msg).startsWith('rate limit store'));

    await redis.kill();
    // Local mode: burst 2 on one gateway; the third request is denied with whole numbers everywhere.
    const replies: Reply[] = [];
    for (let i = 0; i < 5; i++) replies.push(await send(agent, `${t.gateway.url}/x`));
    expect(replies.map((r) => r.status)).toEqual([200, 200, 429, 429, 429]);
    for (const r of replies.slice(2)) expectCleanDenial(r);
    expect(warnings().map((l) => l.msg)).toEqual([
      'rate limit store unavailable: decisions follow the failure mode "local"',
    ]);
    await prom.waitFor(gauge, (v) => v === 1);
    await prom.waitFor('edge_store_errors_total{store="redis"}', (v) => v >= 3);
    const seen = new Set<string>();
    const deadline = Date.now() + 15_000;
    while (!seen.has('firing')) {
      for (const s of await alertStates()) seen.add(s);
      if (Date.now() > deadline)
        throw new Error(`${ALERT} did not fire; states seen: ${[...seen].join(', ')}`);
      await new Promise((r) => setTimeout(r, 200));
    }
    expect([...seen].some((s) => s === 'pending' || s === 'firing')).toBe(true);

    await redis.restart();
    await whileServing(async () => (await prom.query(gauge))[0]?.value === 0, 'the gauge back at 0');
    await whileServing(async () => (await alertStates()).length === 0, `${ALERT} to resolve`);
    expect(warnings().map((l) => l.msg)).toEqual([
      'rate limit store unavailable: decisions follow the failure mode "local"',
      'rate limit store answers again: decisions come from the store',
    ]);
    const switches = await prom.present('edge_store_failure_mode_switches_total');
    expect(switches.map((s) => [s.metric.store, s.metric.mode, s.value])).toEqual([['redis', 'local', 1]]);
    // Every store series is a number, never NaN.
    const tracked = await prom.present('edge_tracked_keys{store="redis"}');
    expect(tracked).toHaveLength(1);
    expect(Number.isFinite(tracked[0].value)).toBe(true);
  }, 60_000);
});
