import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { type RedisServer, startRedisServer } from '../../../test/support/redis-server.js';
import { main } from '../src/cli/main.js';
import { hashApiKey } from '../src/identity/api-key-file.js';
import {
  client,
  send,
  startGateway,
  startUpstream,
  statuses,
  type TestGateway,
  type TestUpstream,
  tempDir,
  WALL_MS,
} from './support.js';

const tmp = tempDir();
const agent = client();
const TOKEN = 'admin-token-0123456789';
const auth = { authorization: `Bearer ${TOKEN}` };
let upstream: TestUpstream;
let redis: RedisServer;
const running: TestGateway[] = [];

const config = (store = '') => `rateLimiting:
  defaultTier: free
  tiers:
    free: { requestsPerMinute: 60, burstLimit: 2 }
    gold: { requestsPerMinute: 600, burstLimit: 20 }
admin:
  port: 0
  token: \${ADMIN_TOKEN}
  token_name: alice
${store}`;

beforeAll(async () => {
  upstream = await startUpstream();
  redis = await startRedisServer();
});
afterAll(async () => {
  await Promise.all(running.map((g) => g.gateway.close()));
  await upstream.close();
  await agent.close();
  await redis.stop();
  tmp.cleanup();
});

async function start(name: string, yaml: string, now?: () => number): Promise<TestGateway> {
  const g = await startGateway(join(tmp.dir, `${name}.yaml`), {
    yaml,
    env: { ADMIN_TOKEN: TOKEN, REDIS_URL: redis.url },
    overrides: { upstream: upstream.url },
    ...(now === undefined ? {} : { now }),
  });
  running.push(g);
  return g;
}

const put = (g: TestGateway, body: unknown) =>
  send(agent, `${g.gateway.adminUrl}/overrides`, {
    method: 'PUT',
    headers: { ...auth, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });

describe('operator overrides through the admin API (memory store)', () => {
  it('sets, applies, lists, audits and removes an override; history keeps order and reason', async () => {
    const g = await start('memory', config());
    const url = `${g.gateway.url}/items`;
    expect(await statuses(agent, url, 3)).toEqual([200, 200, 429]);
    const set = await put(g, {
      pattern: 'ip:127.0.0.1',
      quota: 600,
      window: 60,
      burst: 5,
      reason: 'load test',
    });
    expect(set.status).toBe(200);
    expect(set.json<{ override: { id: string; author: string } }>().override).toMatchObject({
      id: 'ip:127.0.0.1',
      author: 'alice',
    });
    const ok = await send(agent, url);
    expect(ok.status).toBe(200);
    expect(ok.headers['ratelimit-policy']).toMatch(/;q=600;w=60$/);
    expect(ok.headers['x-ratelimit-limit']).toBe('600');
    expect(await statuses(agent, url, 5)).toEqual([200, 200, 200, 200, 429]);
    const denied = await send(agent, url);
    expect(denied.json()).toMatchObject({ limit: 600 });
    const listed = (await send(agent, `${g.gateway.adminUrl}/overrides`, { headers: auth })).json<{
      store: string;
      overrides: { id: string }[];
    }>();
    expect(listed).toMatchObject({ store: 'memory', overrides: [{ id: 'ip:127.0.0.1' }] });
    const audit = g.logs.lines.find((l) => l.audit === 'override');
    expect(audit).toMatchObject({ action: 'set', id: 'ip:127.0.0.1', who: 'alice', reason: 'load test' });
    expect(audit?.at).toBe(new Date(WALL_MS).toISOString());

    const rm = await send(agent, `${g.gateway.adminUrl}/overrides?id=ip%3A127.0.0.1&reason=done`, {
      method: 'DELETE',
      headers: auth,
    });
    expect(rm.status).toBe(200);
    expect((await send(agent, url)).headers['x-ratelimit-limit']).toBe('60');
    const again = await send(agent, `${g.gateway.adminUrl}/overrides?id=ip%3A127.0.0.1`, {
      method: 'DELETE',
      headers: auth,
    });
    expect(again.status).toBe(404);
    const history = (await send(agent, `${g.gateway.adminUrl}/overrides/history`, { headers: auth })).json<{
      changes: { action: string; reason: string; who: string }[];
    }>();
    expect(history.changes.map((c) => [c.action, c.reason, c.who])).toEqual([
      ['set', 'load test', 'alice'],
      ['remove', 'done', 'alice'],
    ]);
  });

  it('logs and counts a request let through by an unlimited override as such, with its key', async () => {
    const g = await start('unlimited', config());
    expect((await put(g, { pattern: 'ip:127.0.0.1', unlimited: true, reason: 'load test' })).status).toBe(
      200,
    );
    expect(await statuses(agent, `${g.gateway.url}/items`, 4)).toEqual([200, 200, 200, 200]);
    const line = g.logs.lines.find((l) => l.url === '/items');
    expect(line).toMatchObject({ outcome: 'exempt_override', key: 'ip:127.0.0.1' });
    const metrics = await send(agent, `${g.gateway.url}/metrics`);
    expect(metrics.text).toMatch(/sluice_exempt_total\{[^}]*reason="override"[^}]*\} 4/);
  });

  it('blocks with 429 and Retry-After until the block ends', async () => {
    let wall = WALL_MS;
    const g = await start('block', config(), () => wall);
    const url = `${g.gateway.url}/items`;
    expect(
      (await put(g, { pattern: 'ip:127.0.0.0/8', block: 429, ttlSeconds: 600, reason: 'abuse' })).status,
    ).toBe(200);
    const blocked = await send(agent, url);
    expect(blocked.status).toBe(429);
    expect(blocked.headers['retry-after']).toBe('600');
    expect(blocked.json()).toMatchObject({ code: 'blocked' });
    const blocks = (await send(agent, `${g.gateway.adminUrl}/blocks`, { headers: auth })).json<{
      blocks: { expiresInSeconds: number }[];
    }>();
    expect(blocks.blocks).toMatchObject([{ expiresInSeconds: 600 }]);
    wall += 599_000;
    expect((await send(agent, url)).headers['retry-after']).toBe('1');
    // No bucket decided them: counted apart in Prometheus, and as denied requests on the dashboard.
    const metrics = await send(agent, `${g.gateway.url}/metrics`);
    expect(metrics.text).toMatch(/sluice_blocked_total\{status="429"\} 2/);
    expect(g.gateway.rates.series().some((x) => x.kind === 'requests')).toBe(true);
    wall += 1000;
    expect((await send(agent, url)).status).toBe(200);
  });

  it.each([
    [{ pattern: 'ip:1.2.3.4', policy: 'nope', quota: 5, window: 60, reason: 'x' }, 'policy'],
    [{ pattern: 'ip:1.2.3.4', tier: 'platinum', quota: 5, window: 60, reason: 'x' }, 'tier'],
    [{ pattern: 'ip:1.2.3.4', quota: -5, window: 60, reason: 'x' }, 'quota'],
    [{ pattern: 'ip:1.2.3.4', quota: 5, window: 60, expiresAt: WALL_MS - 1, reason: 'x' }, 'expiresAt'],
    // Once a 500 with the rule stored anyway, and a 500 for every request of the client after it.
    [{ pattern: 'ip:1.2.3.4', block: 403, expiresAt: 1e17, reason: 'x' }, 'expiresAt'],
    [{ pattern: '*', quota: 5, window: 60, reason: 'x' }, 'pattern'],
    [{ pattern: 'ip:10.0.0.0/99', block: 403, reason: 'x' }, 'pattern'],
    // Patterns that named no request: a kind in the wrong case, an address that is not one or is ambiguous.
    [{ pattern: 'IP:127.0.0.1', block: 403, reason: 'x' }, 'pattern'],
    [{ pattern: 'ip:010.0.0.1', block: 403, reason: 'x' }, 'pattern'],
    [{ pattern: 'ip:1.2.3', block: 403, reason: 'x' }, 'pattern'],
    [{ pattern: 'ip:1.2.3.4', quota: 5, window: 60 }, 'reason'],
  ])('answers %j with a 400 problem naming %s', async (body, field) => {
    const g = running[0];
    const r = await put(g, body);
    expect(r.status).toBe(400);
    expect(r.headers['content-type']).toBe('application/problem+json');
    expect(r.json()).toMatchObject({ status: 400, code: 'invalid_override', field });
  });

  it('stores an IPv4-mapped or zero-padded address as the IPv4 key it names, and applies it', async () => {
    const g = await start('canonical', config());
    for (const [pattern, quota] of [
      ['ip:::ffff:127.0.0.1', 600],
      ['ip:127.000.000.001', 700],
    ] as const) {
      const r = await put(g, { pattern, quota, window: 60, reason: 'x' });
      expect(r.json()).toMatchObject({ override: { pattern: 'ip:127.0.0.1', id: 'ip:127.0.0.1' } });
      expect((await send(agent, `${g.gateway.url}/items`)).headers['x-ratelimit-limit']).toBe(String(quota));
    }
    expect(g.gateway.overrides.list()).toHaveLength(1);
    // Removed by the pattern as the operator typed it, too.
    const rm = await send(
      agent,
      `${g.gateway.adminUrl}/overrides?id=${encodeURIComponent('ip:::ffff:127.0.0.1')}&reason=done`,
      { method: 'DELETE', headers: auth },
    );
    expect(rm.status).toBe(200);
    expect(rm.json()).toMatchObject({ removed: { id: 'ip:127.0.0.1' } });
    expect(g.gateway.overrides.list()).toHaveLength(0);
  });

  it('blocks a single IPv6 client by its address (its bucket key is its /64)', async () => {
    const g = await start('ipv6', `${config()}server: { trustedProxies: [loopback] }\n`);
    const r = await put(g, { pattern: 'ip:2001:DB8:0::1', block: 403, reason: 'x' });
    expect(r.json()).toMatchObject({ override: { pattern: 'ip:2001:db8::1' } });
    const from = (ip: string) =>
      send(agent, `${g.gateway.url}/items`, { headers: { 'x-forwarded-for': ip } });
    expect((await from('2001:db8::1')).status).toBe(403);
    expect((await from('2001:db8::2')).status).toBe(200);
  });

  it('applies a rule on one IPv4 address to every request from it, whatever its identity', async () => {
    const g = await start(
      'ipv4-any-key',
      `${config()}server: { trustedProxies: [loopback] }\nidentity: { headers: {} }\n`,
    );
    expect((await put(g, { pattern: 'ip:203.0.113.9', block: 403, reason: 'x' })).status).toBe(200);
    const from = (ip: string, identity: Record<string, string> = {}) =>
      send(agent, `${g.gateway.url}/items`, { headers: { 'x-forwarded-for': ip, ...identity } });
    const tenant = { 'x-tenant-id': 'acme', 'x-client-id': 'web' };
    expect((await from('203.0.113.9')).status).toBe(403);
    expect((await from('203.0.113.9', tenant)).status).toBe(403);
    expect((await from('203.0.113.10', tenant)).status).toBe(200);
  });

  it('stores a tenant in lower case and a range as its network address, removable by either form', async () => {
    const g = await start(
      'canonical-forms',
      `${config()}server: { trustedProxies: [loopback] }\nidentity: { headers: {} }\n`,
    );
    const set = await put(g, { pattern: 'tenant:EPSILON', block: 403, reason: 'x' });
    expect(set.json()).toMatchObject({ override: { pattern: 'tenant:epsilon', id: 'tenant:epsilon' } });
    for (const t of ['EPSILON', 'Epsilon', 'epsilon']) {
      const r = await send(agent, `${g.gateway.url}/items`, {
        headers: { 'x-tenant-id': t, 'x-client-id': 'web' },
      });
      expect(r.status).toBe(403);
    }
    const range = await put(g, { pattern: 'ip:198.18.60.9/24', block: 403, reason: 'x' });
    expect(range.json()).toMatchObject({ override: { id: 'ip:198.18.60.0/24' } });
    expect((await put(g, { pattern: 'ip:198.18.60.0/24', block: 403, reason: 'x' })).status).toBe(200);
    expect(g.gateway.overrides.list()).toHaveLength(2);
    const rm = await send(
      agent,
      `${g.gateway.adminUrl}/overrides?id=${encodeURIComponent('ip:198.18.60.0/24')}&reason=done`,
      { method: 'DELETE', headers: auth },
    );
    expect(rm.status).toBe(200);
    expect(g.gateway.overrides.list()).toHaveLength(1);
  });

  it('leaves concurrency policies as configured under a limit, and refuses a limit scoped to one', async () => {
    const yaml = config().replace(
      'free: { requestsPerMinute: 60, burstLimit: 2 }',
      'free: { requestsPerMinute: 60, burstLimit: 2, concurrentRequests: 2 }',
    );
    const g = await start('concurrency', yaml);
    expect((await put(g, { pattern: 'ip:127.0.0.1', quota: 6000, window: 60, reason: 'x' })).status).toBe(
      200,
    );
    const policy = (await send(agent, `${g.gateway.url}/items`)).headers['ratelimit-policy'];
    expect(policy).toContain('q=6000;w=60');
    expect(policy).not.toMatch(/"free\.concurrent";q=6000/);
    const scoped = await put(g, {
      pattern: 'ip:127.0.0.1',
      policy: 'free.concurrent',
      quota: 6000,
      window: 60,
      reason: 'x',
    });
    expect(scoped.status).toBe(400);
    expect(scoped.json()).toMatchObject({ code: 'invalid_override', field: 'policy' });
    const lifted = { pattern: 'ip:127.0.0.1', policy: 'free.concurrent', unlimited: true, reason: 'x' };
    expect((await put(g, lifted)).status).toBe(200);
  });

  it('refuses a body that is not JSON, naming the body', async () => {
    const r = await send(agent, `${running[0].gateway.adminUrl}/overrides`, {
      method: 'PUT',
      headers: auth,
      body: '{',
    });
    expect(r.json()).toMatchObject({ status: 400, field: 'body' });
  });

  it.each([
    ['declared', false],
    ['chunked', true],
  ])(
    'answers a %s body over 16 KiB with a 413 naming the limit, which reaches the client',
    async (_kind, chunked) => {
      for (const size of [100 * 1024, 256 * 1024]) {
        const big = JSON.stringify({ pattern: 'ip:192.0.2.1', block: 403, reason: 'x'.repeat(size) });
        const r = await send(agent, `${running[0].gateway.adminUrl}/overrides`, {
          method: 'PUT',
          headers: { ...auth, 'content-type': 'application/json' },
          body: chunked ? Readable.from([Buffer.from(big)]) : big,
        });
        expect(r.status).toBe(413);
        expect(r.headers['content-type']).toBe('application/problem+json');
        expect(r.json()).toMatchObject({
          status: 413,
          code: 'body_too_large',
          field: 'body',
          limit: 16384,
          detail: 'The request body is larger than 16384 bytes.',
        });
      }
    },
  );
});

describe('API key names', () => {
  it('resolves apikey-name:<name> to that key caller when set, and names the pattern when it cannot', async () => {
    writeFileSync(
      join(tmp.dir, 'keys.yaml'),
      `keys:\n  - { hash: ${hashApiKey('key-ci')}, tenant: acme, client: ci, name: ci-bot }\n  - { hash: ${hashApiKey('key-plain')}, name: plain }\n`,
    );
    const g = await start('apikeys', config('identity:\n  apiKeys: { file: keys.yaml }\n'));
    const r = await put(g, { pattern: 'apikey-name:ci-bot', quota: 600, window: 60, reason: 'ci' });
    expect(r.json()).toMatchObject({
      override: { pattern: 'tenant:acme:client:ci', id: 'tenant:acme:client:ci' },
    });
    const seen = await send(agent, `${g.gateway.url}/items`, { headers: { 'x-api-key': 'key-ci' } });
    expect(seen.headers['x-ratelimit-limit']).toBe('600');
    for (const pattern of ['apikey-name:nobody', 'apikey-name:plain']) {
      expect((await put(g, { pattern, quota: 600, window: 60, reason: 'x' })).json()).toMatchObject({
        status: 400,
        field: 'pattern',
      });
    }
    const none = await put(running[0], { pattern: 'apikey-name:ci-bot', quota: 6, window: 60, reason: 'x' });
    expect(none.json()).toMatchObject({
      status: 400,
      field: 'pattern',
      detail: expect.stringContaining('identity.apiKeys.file'),
    });
  });
});

describe('sluice override and sluice block', () => {
  async function cli(g: TestGateway, ...argv: string[]) {
    const out: string[] = [];
    const err: string[] = [];
    const code = await main(argv, {
      out: (t) => out.push(t),
      err: (t) => err.push(t),
      onSignal: () => () => undefined,
      env: { SLUICE_ADMIN_URL: g.gateway.adminUrl, SLUICE_ADMIN_TOKEN: TOKEN },
    });
    return { code, out: out.join(''), err: err.join('') };
  }

  it('sets, lists, removes and shows the history through the admin API', async () => {
    const g = await start('cli', config());
    expect(
      await cli(
        g,
        'override',
        'set',
        'tenant:acme',
        '--tier',
        'gold',
        '--quota',
        '900',
        '--window',
        '1m',
        '--for',
        '1h',
        '--reason',
        'promo',
      ),
    ).toEqual({
      code: 0,
      out: 'set tenant:acme tier=gold\n',
      err: '',
    });
    expect(
      await cli(
        g,
        'block',
        'set',
        'ip:192.0.2.0/24',
        '--status',
        '429',
        '--for',
        '10m',
        '--reason',
        'scraper',
      ),
    ).toMatchObject({ code: 0 });
    const list = await cli(g, 'override', 'list');
    expect(list.out).toContain(
      'tenant:acme tier=gold\tquota 900 burst 900 window 60s\t1 h 00 min left\talice: promo',
    );
    expect((await cli(g, 'block', 'list')).out).toBe(
      'ip:192.0.2.0/24\tblock 429\t10 min 00 s left\talice: scraper\n',
    );
    expect(await cli(g, 'block', 'rm', 'ip:192.0.2.0/24', '--reason', 'gone')).toMatchObject({ code: 0 });
    const history = await cli(g, 'override', 'history', '--json');
    expect(
      JSON.parse(history.out).map((c: { action: string; reason: string }) => `${c.action}:${c.reason}`),
    ).toEqual(['set:promo', 'set:scraper', 'remove:gone']);
  });

  it('reports the field the gateway refused, and usage errors with exit 2', async () => {
    const g = running[0];
    const bad = await cli(g, 'override', 'set', 'k', '--quota=-3', '--window', '60', '--reason', 'x');
    expect(bad.code).toBe(1);
    expect(bad.err).toMatch(/^sluice override: 400 .*\(given by --quota\)\n$/);
    const kind = await cli(g, 'block', 'set', 'IP:127.0.0.1', '--reason', 'x');
    expect(kind.code).toBe(1);
    expect(kind.err).toMatch(
      /^sluice block: 400 pattern must be written with its kind in lower case .*\(given as PATTERN\)\n$/,
    );
    // The gateway names its API's fields; the command says which of its options gives each.
    const noWindow = await cli(g, 'override', 'set', 'k', '--quota', '5', '--reason', 'x');
    expect(noWindow.err).toMatch(/^sluice override: 400 window .*\(given by --window\)\n$/);
    const noEnd = await cli(g, 'block', 'set', 'ip:203.0.113.1', '--status', '429', '--reason', 'x');
    expect(noEnd.err).toMatch(/\(given by --for or --until\)\n$/);
    expect((await cli(g, 'override', 'set', 'k', '--unlimited')).code).toBe(2);
    expect((await cli(g, 'block', 'set', 'k', '--status', '404', '--reason', 'x')).code).toBe(2);
    expect((await cli(g, 'override', 'frob')).code).toBe(2);
    expect((await cli(g, 'override', '--help')).code).toBe(0);
  });
});

describe('penalty blocks', () => {
  it('blocks a key limited N times in the window, with a metric and a log line, doubling on repeat', async () => {
    let wall = WALL_MS;
    const penalty = 'penalty:\n  after: 2\n  within: 60s\n  block: 10s\n  maxBlock: 15s\n';
    const g = await start('penalty', config(penalty), () => wall);
    const url = `${g.gateway.url}/items`;
    expect(await statuses(agent, url, 4)).toEqual([200, 200, 429, 429]);
    // The block is set asynchronously after the second denial: wait for it on the store, not by requests.
    await vi.waitFor(() => expect(g.gateway.overrides.list()).toHaveLength(1), {
      timeout: 1000,
      interval: 5,
    });
    const blocked = await send(agent, url);
    expect(blocked.json()).toMatchObject({ code: 'blocked' });
    expect(blocked.headers['retry-after']).toBe('10');
    const line = g.logs.lines.find((l) => l.penalty === true);
    // `level` is the line's severity (warn), not overwritten by the block's doublings.
    expect(line).toMatchObject({
      key: 'ip:127.0.0.1',
      durationSeconds: 10,
      doublings: 0,
      level: 40,
      status: 429,
    });
    const metrics = await send(agent, `${g.gateway.url}/metrics`);
    expect(metrics.text).toMatch(/sluice_penalty_blocks_total\{status="429"\} 1/);
    wall += 10_000;
    g.clock.advance(60_000); // the bucket refills on the store's clock
    expect(await statuses(agent, url, 4)).toEqual([200, 200, 429, 429]);
    await vi.waitFor(() => expect(g.gateway.overrides.list()).toHaveLength(1), {
      timeout: 1000,
      interval: 5,
    });
    expect((await send(agent, url)).headers['retry-after']).toBe('15');
  });
});

describe('overrides on Redis', () => {
  it('applies an override set on one gateway on a second gateway within 1 s, and ends it on time', async () => {
    let wall = Date.now();
    const redisStore = `store:\n  type: redis\n  url: \${REDIS_URL}\nkeys: { prefix: "ov-e2e:" }\n`;
    const a = await start('redis-a', config(redisStore), () => wall);
    const b = await start('redis-b', config(redisStore), () => wall);
    const r = await put(a, {
      pattern: 'ip:127.0.0.1',
      quota: 6000,
      window: 60,
      ttlSeconds: 30,
      reason: 'fleet',
    });
    expect(r.status).toBe(200);
    // Polled on the second gateway's cache (a request before the rule arrives would spend a token).
    await vi.waitFor(() => expect(b.gateway.overrides.list()).toHaveLength(1), {
      timeout: 1000,
      interval: 10,
    });
    const seen = await send(agent, `${b.gateway.url}/items`);
    expect(seen.headers['x-ratelimit-limit']).toBe('6000');
    wall += 30_000;
    expect((await send(agent, `${b.gateway.url}/items`)).headers['x-ratelimit-limit']).toBe('60');
    const history = (await send(agent, `${b.gateway.adminUrl}/overrides/history`, { headers: auth })).json<{
      changes: { who: string; reason: string }[];
    }>();
    expect(history.changes).toMatchObject([{ who: 'alice', reason: 'fleet' }]);
  });
});
