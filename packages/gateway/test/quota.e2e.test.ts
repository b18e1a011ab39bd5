import { readFileSync, writeFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { verifyWebhookSignature } from 'sluice/quota';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type RedisServer, redisCli, startRedisServer } from '../../../test/support/redis-server.js';
import { loadConfigText } from '../src/config/load-config.js';
import {
  client,
  decisionEndpoint,
  send,
  startGateway,
  startUpstream,
  type TestGateway,
  type TestUpstream,
  tempDir,
} from './support.js';

/**
 * Tenant quota tracking in the running gateway, over real sockets: every admitted request of a tenant is counted
 * by endpoint category in memory or in a real redis-server, the admin API reports a tenant's usage and the top
 * tenants, thresholds raise one signed webhook per crossing, and the dashboard's quota panel reads the tracker.
 */

const tmp = tempDir();
const agent = client();
const TOKEN = 'quota-admin-token';
const auth = { authorization: `Bearer ${TOKEN}` };
const SECRET = 'quota-webhook-secret-0123456789';
let upstream: TestUpstream;

const yaml = (store: string, quota: string) => `rateLimiting:
  defaultTier: standard
  tiers:
    standard: { requestsPerMinute: 600, requestsPerHour: 10, burstLimit: 100 }
    internal: { unlimited: true }
  endpoints:
    - pattern: "/api/risk/simulation/*"
      limit: 30
      window: 60s
server:
  trustedProxies: [loopback]
identity:
  headers: {}
${store}
metrics: { prefix: acme_edge }
decision: { port: 0, trustIdentityHeaders: true }
admin: { port: 0, token: ${TOKEN} }
upstream: { url: "${upstream.url}" }
${quota}`;

const as = (tenant: string, client = 'app') => ({ 'x-tenant-id': tenant, 'x-client-id': client });

async function get(base: string, path: string): Promise<Record<string, unknown>> {
  const r = await send(agent, `${base}${path}`, { headers: auth });
  expect(r.status, `${path}: ${r.text}`).toBe(200);
  return r.json();
}

beforeAll(async () => {
  upstream = await startUpstream();
});

afterAll(async () => {
  await upstream.close();
  await agent.close();
  tmp.cleanup();
});

describe('quota tracking on the memory store', () => {
  let t: TestGateway;
  let hook: Server;
  const received: { req: IncomingMessage; body: string }[] = [];
  const waiters: (() => void)[] = [];

  beforeAll(async () => {
    hook = createServer((req, res) => {
      let body = '';
      req.on('data', (c: Buffer) => {
        body += c.toString('utf8');
      });
      req.on('end', () => {
        received.push({ req, body });
        res.writeHead(204);
        res.end();
        for (const w of waiters.splice(0)) w();
      });
    });
    await new Promise<void>((r) => hook.listen(0, '127.0.0.1', r));
    const hookUrl = `http://127.0.0.1:${(hook.address() as AddressInfo).port}/hooks/quota`;
    t = await startGateway(join(tmp.dir, 'memory.yaml'), {
      env: { HOOK_URL: hookUrl, HOOK_SECRET: SECRET },
      yaml: yaml(
        '',
        `quota:
  tracking: { storage: memory, ttl: 3600, bucket: 60s, flushInterval: 60s }
  dimensions: [tenant_id, endpoint_category, time_bucket]
  categories:
    - name: risk-simulation
      rules: ["/api/risk/simulation/*"]
    - name: airgap
      patterns: ["/system/airgap/*"]
  limits:
    tenants: { globex: 4 }
  thresholds: [0.5, 1]
  webhook: { url: "\${HOOK_URL}", secret: "\${HOOK_SECRET}", headerPrefix: x-acme }
`,
      ),
    });
  });

  afterAll(async () => {
    await t.gateway.close();
    hook.closeAllConnections();
    await new Promise<void>((r) => hook.close(() => r()));
  });

  /** Waits until the receiver has `n` deliveries (the webhook is off the request path). */
  const deliveries = async (n: number) => {
    while (received.length < n) await new Promise<void>((r) => waiters.push(r));
    return received;
  };

  it('counts admitted requests per tenant and endpoint category, not denied or anonymous ones', async () => {
    const base = t.gateway.url;
    for (const path of [
      '/api/risk/simulation/run',
      '/api/risk/simulation/studio/x',
      '/api/risk/simulation/a',
    ])
      expect((await send(agent, `${base}${path}`, { headers: as('acme') })).status).toBe(200);
    expect((await send(agent, `${base}/system/airgap/seal`, { headers: as('acme') })).status).toBe(200);
    expect((await send(agent, `${base}/other`, { headers: as('acme', 'cli') })).status).toBe(200);
    expect((await send(agent, `${base}/other`, { headers: as('acme', 'cli') })).status).toBe(200);
    // Anonymous requests have no tenant; the unlimited tier is exempt but still the tenant's usage.
    expect((await send(agent, `${base}/anon`)).status).toBe(200);
    expect(
      (await send(agent, `${base}/x`, { headers: { ...as('initech'), 'x-rate-limit-tier': 'internal' } }))
        .status,
    ).toBe(200);
    // The hour limit (10) of tenant "flood": 12 requests, 10 admitted.
    const statuses: number[] = [];
    for (let i = 0; i < 12; i++)
      statuses.push((await send(agent, `${base}/f`, { headers: as('flood') })).status);
    expect(statuses.filter((s) => s === 429)).toHaveLength(2);

    const acme = await get(t.gateway.adminUrl!, '/quota/tenants/acme');
    expect(acme).toEqual({
      tenant: 'acme',
      total: 6,
      quota: 10,
      ratio: 0.6,
      categories: { airgap: 1, other: 2, 'risk-simulation': 3 },
      windowSeconds: 3600,
      bucketSeconds: 60,
    });
    const flood = await get(t.gateway.adminUrl!, '/quota/tenants/flood');
    expect([flood.total, flood.quota]).toEqual([10, 10]);
    const initech = await get(t.gateway.adminUrl!, '/quota/tenants/initech');
    expect([initech.total, initech.quota]).toEqual([1, undefined]);
    const top = await get(t.gateway.adminUrl!, '/quota/top?n=2');
    expect(top).toMatchObject({ windowSeconds: 3600, bucketSeconds: 60, thresholds: [0.5, 1] });
    expect(top.tenants).toEqual([
      { tenant: 'flood', total: 10, quota: 10, ratio: 1 },
      { tenant: 'acme', total: 6, quota: 10, ratio: 0.6 },
    ]);
  });

  it('serves the top limited keys as hashes, never the key itself', async () => {
    const top = await get(t.gateway.adminUrl!, '/limited-keys/top?n=5');
    const keys = top.keys as { hash: string; policy: string; count: number }[];
    expect(keys).toHaveLength(1);
    expect(keys[0]).toMatchObject({ policy: 'standard.hour', count: 2 });
    expect(keys[0].hash).toMatch(/^[0-9a-f]{16,}$/);
    expect(JSON.stringify(top)).not.toContain('flood');
    for (const q of ['?n=0', '?n=abc', '?n=1001']) {
      const r = await send(agent, `${t.gateway.adminUrl}/limited-keys/top${q}`, { headers: auth });
      // Bad input on the admin listener is a problem, like everywhere else.
      expect([r.status, r.headers['content-type']]).toEqual([400, 'application/problem+json']);
      expect(r.json()).toMatchObject({ status: 400, detail: 'n must be an integer from 1 to 1000' });
    }
    expect((await send(agent, `${t.gateway.adminUrl}/quota/top`)).status).toBe(401);
    expect(
      (await send(agent, `${t.gateway.adminUrl}/quota/top`, { method: 'DELETE', headers: auth })).status,
    ).toBe(405);
  });

  it('raises one signed webhook per threshold crossing, and the usage gauge', async () => {
    const before = received.length;
    const base = t.gateway.url;
    // globex's quota is 4 (quota.limits.tenants): 2 requests cross 50%, 2 more cross 100%, more cross nothing new.
    for (let i = 0; i < 2; i++) await send(agent, `${base}/g`, { headers: as('globex') });
    await t.gateway.quota!.tracker.flush();
    for (let i = 0; i < 3; i++) await send(agent, `${base}/g`, { headers: as('globex') });
    await t.gateway.quota!.tracker.flush();
    await send(agent, `${base}/g`, { headers: as('globex') });
    await t.gateway.quota!.tracker.flush();
    const all = await deliveries(before + 2);
    const globex = all
      .map((d) => ({ d, alert: JSON.parse(d.body) as Record<string, unknown> }))
      .filter((x) => x.alert.tenant === 'globex');
    expect(globex.map((x) => x.alert.threshold)).toEqual([0.5, 1]);
    for (const { d } of globex) {
      expect(d.req.headers['x-acme-event']).toBe('quota.threshold_crossed');
      const signature = d.req.headers['x-acme-signature'] as string;
      expect(verifyWebhookSignature(SECRET, signature, d.body)).toBe(true);
      expect(verifyWebhookSignature('another-secret-0123456789', signature, d.body)).toBe(false);
    }
    // The per-tenant gauge is the admin listener's; the proxy listener's /metrics leaves it out.
    const metrics = (await send(agent, `${t.gateway.adminUrl}/metrics`, { headers: auth })).text;
    expect((await send(agent, `${base}/metrics`)).text).not.toContain('quota_usage_ratio{');
    expect(metrics).toMatch(/^acme_edge_quota_usage_ratio\{tenant="globex"\} 1\.5$/m);
    expect(metrics).toMatch(/^acme_edge_quota_usage_ratio\{tenant="acme"\} 0\.6$/m);
    // The 50% alerts of acme and flood and the 100% of flood came with the first flushes.
    expect(all.filter((d) => JSON.parse(d.body).tenant === 'flood')).toHaveLength(2);
    const lines = t.logs.lines.filter((l) => String(l.msg).startsWith('quota alert: tenant="globex"'));
    expect(lines).toHaveLength(2);
  });

  it("feeds the dashboard's quota panel", async () => {
    const state = await get(t.gateway.adminUrl!, '/dashboard/state');
    const panel = (state.status as { topTenants: Record<string, unknown> }).topTenants;
    expect(panel.available).toBe(true);
    expect(panel.thresholds).toEqual([0.5, 1]);
    const items = panel.items as { tenant: string; used: number; quota?: number; ratio?: number }[];
    expect(items.map((i) => i.tenant)).toEqual(['flood', 'acme', 'globex', 'initech']);
    expect(items.find((i) => i.tenant === 'globex')).toEqual({
      tenant: 'globex',
      used: 6,
      quota: 4,
      ratio: 1.5,
    });
  });

  it('counts requests admitted through the decision API (the same admission as the proxy)', async () => {
    const url = decisionEndpoint(t.gateway);
    const h = {
      ...as('hooli'),
      'x-original-uri': '/api/risk/simulation/run?x=1',
      'x-original-method': 'POST',
    };
    for (let i = 0; i < 3; i++) expect((await send(agent, url, { headers: h })).status).toBe(200);
    const usage = await get(t.gateway.adminUrl!, '/quota/tenants/hooli');
    expect([usage.total, usage.categories]).toEqual([3, { 'risk-simulation': 3 }]);
  });

  it('redacts the webhook secret in the effective configuration', async () => {
    const config = await get(t.gateway.adminUrl!, '/config');
    expect(JSON.stringify(config)).not.toContain(SECRET);
    expect((config.quota as { webhook: { secret: string } }).webhook.secret).toBe('[redacted]');
  });

  it('applies new limits and categories on reload; storage and thresholds need a restart', async () => {
    const text = readFileSync(t.file, 'utf8')
      .replace('tenants: { globex: 4 }', 'tenants: { globex: 12 }')
      .replace('patterns: ["/system/airgap/*"]', 'patterns: ["/system/airgap/*", "/g"]')
      .replace('thresholds: [0.5, 1]', 'thresholds: [0.9, 1]');
    writeFileSync(t.file, text);
    const result = await t.gateway.reload();
    expect([result.ok, result.restartRequired]).toEqual([true, ['quota.tracking/thresholds/webhook']]);
    await send(agent, `${t.gateway.url}/g`, { headers: as('globex') });
    const usage = await get(t.gateway.adminUrl!, '/quota/tenants/globex');
    expect([usage.total, usage.quota, usage.categories]).toEqual([7, 12, { airgap: 1, other: 6 }]);
  });
});

describe('quota tracking on Redis', () => {
  let redis: RedisServer;
  let a: TestGateway;
  let b: TestGateway;

  beforeAll(async () => {
    redis = await startRedisServer();
    const store = `store: { type: redis, url: "redis://127.0.0.1:${redis.port}" }`;
    // The quota block as documented: Redis storage, its key prefix and TTL, its dimensions.
    const quota = `quota:
  tracking:
    storage: redis  # Valkey (Redis-compatible)
    key_prefix: "acme:quota:"
    ttl: 3600  # 1 hour rolling window

  dimensions:
    - tenant_id
    - endpoint_category
    - time_bucket
  categories:
    - { name: risk-simulation, rules: ["/api/risk/simulation/*"] }
`;
    // Quota buckets expire in Redis by wall-clock time, so these gateways read the real clock.
    a = await startGateway(join(tmp.dir, 'redis-a.yaml'), { yaml: yaml(store, quota), now: Date.now });
    b = await startGateway(join(tmp.dir, 'redis-b.yaml'), { yaml: yaml(store, quota), now: Date.now });
  }, 30_000);

  afterAll(async () => {
    await a?.gateway.close();
    await b?.gateway.close();
    await redis?.stop();
  });

  it('shares usage across gateways through the store connection, under the key prefix with a TTL', async () => {
    for (const g of [a, b]) {
      const sim = await send(agent, `${g.gateway.url}/api/risk/simulation/run`, { headers: as('acme') });
      const other = await send(agent, `${g.gateway.url}/other`, { headers: as('acme') });
      expect([sim.status, other.status]).toEqual([200, 200]);
    }
    expect((await send(agent, `${b.gateway.url}/other`, { headers: as('umbrella') })).status).toBe(200);
    await a.gateway.quota!.tracker.flush();
    await b.gateway.quota!.tracker.flush();
    expect(a.gateway.quota!.tracker.store.kind).toBe('redis');
    const usage = await get(a.gateway.adminUrl!, '/quota/tenants/acme');
    expect([usage.total, usage.categories]).toEqual([4, { other: 2, 'risk-simulation': 2 }]);
    const top = await get(b.gateway.adminUrl!, '/quota/top');
    expect((top.tenants as { tenant: string; total: number }[]).map((r) => [r.tenant, r.total])).toEqual([
      ['acme', 4],
      ['umbrella', 1],
    ]);
    const keys = (await redisCli(redis.port, '--scan', '--pattern', 'acme:quota:*'))
      .split('\n')
      .filter(Boolean);
    expect(keys.some((k) => k.startsWith('acme:quota:{acme}:'))).toBe(true);
    const direct = new Redis(redis.port, '127.0.0.1');
    try {
      const bucketKey = keys.find((k) => k.startsWith('acme:quota:{acme}:'))!;
      expect(await direct.hgetall(bucketKey)).toEqual({ other: '2', 'risk-simulation': '2' });
      const ttl = await direct.ttl(bucketKey);
      expect(ttl).toBeGreaterThan(0);
    } finally {
      direct.disconnect();
    }
  });

  it('flushes the last counts on shutdown', async () => {
    await send(agent, `${a.gateway.url}/other`, { headers: as('late') });
    await a.gateway.close();
    const usage = await get(b.gateway.adminUrl!, '/quota/tenants/late');
    expect(usage.total).toBe(1);
  });
});

describe('the quota section of the configuration', () => {
  const base = `rateLimiting:
  defaultTier: standard
  tiers:
    standard: { requestsPerMinute: 300, requestsPerHour: 10000, burstLimit: 50 }
  endpoints:
    - pattern: "/api/risk/simulation/*"
      limit: 30
      window: 60s
`;

  it('rejects unknown keys and bad values with a suggestion, path and line', () => {
    const r = loadConfigText(
      `${base}quota:
  tracking:
    storag: memory
    ttl: soon
  thresholds: [0]
  webhook: { url: "ftp://hooks.test/q", secret: "\${HOOK_SECRET}" }
`,
      undefined,
      { env: {} },
    );
    expect(r.violations.map((v) => [v.path, v.line, v.message])).toEqual([
      [
        'quota.tracking.storag',
        11,
        'unknown key "storag" (did you mean "storage"?); known keys: storage, key_prefix, ttl, bucket, flushInterval',
      ],
      ['quota.tracking.ttl', 12, expect.stringContaining('got "soon"')],
      ['quota.thresholds[0]', 13, 'must be > 0, got 0'],
      ['quota.webhook.url', 14, 'must match ^https?://; got "ftp://hooks.test/q"'],
      ['quota.webhook.secret', 14, expect.stringContaining('HOOK_SECRET is not set')],
    ]);
  });

  it('checks what the schema cannot, each with its path and line', () => {
    const r = loadConfigText(
      `${base}quota:
  tracking:
    storage: redis
    ttl: 3600
    bucket: 7s
  dimensions: [tenant_id]
  categories:
    - name: sim
      rules: ["/api/risk/simulaton/*"]
    - name: sim
      patterns: ["/x/**"]
    - name: empty
  thresholds: [1, 0.5]
  webhook: { url: "https://hooks.test/q", secret: short }
`,
      undefined,
      { env: {} },
    );
    expect(r.ok).toBe(false);
    expect(r.violations.map((v) => [v.path, v.line, v.message])).toEqual([
      ['quota.tracking.storage', 11, expect.stringContaining('set store.type "redis"')],
      [
        'quota.tracking.bucket',
        13,
        'the bucket (7s) must divide the window (ttl 3600s) into at most 1440 buckets',
      ],
      ['quota.dimensions', 14, expect.stringContaining('missing endpoint_category, time_bucket')],
      [
        'quota.categories[0].rules[0]',
        17,
        'no endpoint rule is named "/api/risk/simulaton/*" (did you mean "/api/risk/simulation/*"?)',
      ],
      ['quota.categories[1].name', 18, 'category "sim" is defined twice'],
      ['quota.categories[1].patterns[0]', 19, expect.stringContaining('must be')],
      ['quota.categories[2]', 20, 'a category needs "rules" or "patterns"'],
      ['quota.thresholds[1]', 21, 'must be above the previous threshold 1'],
      ['quota.webhook.secret', 22, expect.stringContaining('at least 16 characters')],
    ]);
  });

  it('defaults storage to the store, the key prefix to keys.prefix, and reads durations', () => {
    const r = loadConfigText(
      `${base}keys: { prefix: "edge:" }
quota:
  tracking: { ttl: 2h, bucket: 5m, flushInterval: 250ms }
  defaultCategory: misc
  limits: { default: 500 }
`,
      undefined,
      { env: {} },
    );
    expect(r.violations).toEqual([]);
    expect(r.config?.quota).toEqual({
      storage: 'memory',
      keyPrefix: 'edge:quota:',
      windowSeconds: 7200,
      bucketSeconds: 300,
      flushIntervalMs: 250,
      categories: [],
      defaultCategory: 'misc',
      tenantLimits: {},
      defaultLimit: 500,
      thresholds: [0.8, 1],
      webhook: undefined,
    });
  });

  it('loads the example configuration unchanged, with and without its quota block', () => {
    const contract = readFileSync('packages/gateway/examples/rate-limits.yaml', 'utf8');
    const plain = loadConfigText(contract, undefined, { env: {} });
    expect(plain.ok && plain.config.quota).toBeUndefined();
    const withQuota = loadConfigText(
      `${contract}
store: { type: redis, url: "redis://127.0.0.1:6379" }
quota:
  tracking:
    storage: redis  # Valkey (Redis-compatible)
    key_prefix: "stellaops:quota:"
    ttl: 3600  # 1 hour rolling window

  dimensions:
    - tenant_id
    - endpoint_category
    - time_bucket
`,
      undefined,
      { env: {} },
    );
    expect(withQuota.violations).toEqual([]);
    expect(withQuota.config?.quota).toMatchObject({
      storage: 'redis',
      keyPrefix: 'stellaops:quota:',
      windowSeconds: 3600,
      bucketSeconds: 60,
      categories: [],
      defaultCategory: 'other',
      thresholds: [0.8, 1],
      webhook: undefined,
    });
  });
});
