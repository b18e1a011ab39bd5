import { join } from 'node:path';
import { describe, expect, it, vi } from 'vitest';
import { freePort, startRedisServer } from '../../../test/support/redis-server.js';
import { atOnce } from './own-connections.js';
import { redisSuite } from './redis-suite.js';
import { send, startGateway, type TestGateway } from './support.js';

const TOKEN = 'admin-token-0123456789';
const auth = { authorization: `Bearer ${TOKEN}` };
const running: TestGateway[] = [];
const suite = redisSuite(
  () => startRedisServer(),
  () => Promise.all(running.map((g) => g.gateway.close())),
);
const { tmp, agent } = suite;

const TIER =
  'rateLimiting:\n  defaultTier: t\n  tiers:\n    t: { requestsPerMinute: 1, requestsPerHour: 5, burstLimit: 5 }\n';
const ADMIN = `admin:\n  port: 0\n  token: "${TOKEN}"\n  token_name: alice\n`;

async function start(name: string, yaml: string): Promise<TestGateway> {
  const g = await startGateway(join(tmp.dir, `${name}.yaml`), {
    yaml,
    overrides: { upstream: suite.upstream.url },
    now: Date.now,
  });
  running.push(g);
  return g;
}

describe('a gateway on Redis, restarted or started before Redis', () => {
  it('holds a block from its first request after a restart of the gateway', async () => {
    const yaml = `${TIER}${ADMIN}store: { type: redis, url: "${suite.redis.url}" }\nkeys: { prefix: "restart-block:" }\n`;
    const before = await start('restart-block-1', yaml);
    const put = await send(agent, `${before.gateway.adminUrl}/overrides`, {
      method: 'PUT',
      headers: { ...auth, 'content-type': 'application/json' },
      body: JSON.stringify({ pattern: 'ip:127.0.0.1', block: 403, reason: 'abuse' }),
    });
    expect(put.status).toBe(200);
    await before.gateway.close();
    // The restarted gateway: ready as soon as it listens, and from then on the block holds.
    const after = await start('restart-block-2', yaml);
    const [ready, ...first] = await Promise.all([
      send(agent, `${after.gateway.url}/ready`).then((r) => r.status),
      ...Array.from({ length: 10 }, () => atOnce(`${after.gateway.url}/x`, 1).then(([s]) => s)),
    ]);
    expect(ready).toBe(200);
    expect(first).toEqual(Array(10).fill(403));
    for (let i = 0; i < 5; i++) expect((await send(agent, `${after.gateway.url}/x`)).status).toBe(403);
  });

  it('answers 503 to GET /overrides and /blocks, and /ready, until the rules in Redis are read', async () => {
    const port = await freePort();
    const yaml = `${TIER}${ADMIN}store: { type: redis, url: "redis://127.0.0.1:${port}" }\n`;
    // Nothing listens on the port: the gateway waits for its store, then listens without it.
    const g = await start('late-redis', yaml);
    const admin = g.gateway.adminUrl as string;
    for (const path of ['/overrides', '/blocks']) {
      const r = await send(agent, `${admin}${path}`, { headers: auth });
      expect(r.status, path).toBe(503);
      expect(r.json(), path).toMatchObject({ code: 'overrides_unavailable' });
    }
    const notReady = await send(agent, `${g.gateway.url}/ready`);
    expect(notReady.status).toBe(503);
    expect(notReady.json()).toMatchObject({ status: 'overrides_unknown' });
    const late = await startRedisServer({ port });
    try {
      await vi.waitFor(
        async () => {
          const r = await send(agent, `${admin}/overrides`, { headers: auth });
          expect(r.status).toBe(200);
          expect(r.json()).toEqual({ store: 'redis', overrides: [] });
        },
        { timeout: 10_000, interval: 100 },
      );
      expect((await send(agent, `${g.gateway.url}/ready`)).status).toBe(200);
    } finally {
      await g.gateway.close();
      await late.stop();
    }
  }, 30_000);
});
