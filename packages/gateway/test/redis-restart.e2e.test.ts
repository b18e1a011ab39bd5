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

  it('answers 503 to GET /overrides and /blocks until the rules in Redis are read, and /ready says they are unknown', async () => {
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
    // The default failure mode (open) admits meanwhile: the gateway stays ready and says what it does not know.
    const degraded = await send(agent, `${g.gateway.url}/ready`);
    expect(degraded.status).toBe(200);
    expect(degraded.json()).toEqual({
      status: 'degraded',
      store: 'redis',
      failureMode: 'open',
      overrides: 'unknown',
    });
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
      expect((await send(agent, `${g.gateway.url}/ready`)).json()).toEqual({
        status: 'ready',
        store: 'redis',
      });
    } finally {
      await g.gateway.close();
      await late.stop();
    }
  }, 30_000);

  it('is ready in local and open mode when started during an outage, with the rules unknown; not in closed', async () => {
    const down = await startRedisServer();
    await down.kill();
    const modes = ['local', 'open', 'closed'] as const;
    // Started together: each waits for its store before listening without it.
    const gateways = await Promise.all(
      modes.map((mode) =>
        start(
          `outage-${mode}`,
          `${TIER}store: { type: redis, url: "${down.url}", failureMode: ${mode}, nodeCount: 2 }\n`,
        ),
      ),
    );
    try {
      const [local, open, closed] = gateways as [TestGateway, TestGateway, TestGateway];
      const ready = async (g: TestGateway) => {
        const r = await send(agent, `${g.gateway.url}/ready`);
        return [r.status, r.json()];
      };
      // Readiness follows what the failure mode does with requests: local and open serve them, closed refuses.
      expect(await ready(local)).toEqual([
        200,
        { status: 'degraded', store: 'redis', failureMode: 'local', overrides: 'unknown' },
      ]);
      expect(await ready(open)).toEqual([
        200,
        { status: 'degraded', store: 'redis', failureMode: 'open', overrides: 'unknown' },
      ]);
      expect(await ready(closed)).toEqual([503, { status: 'store_unavailable', store: 'redis' }]);
      expect((await send(agent, `${local.gateway.url}/a`)).status).toBe(200);
      expect((await send(agent, `${open.gateway.url}/a`)).status).toBe(200);
      expect((await send(agent, `${closed.gateway.url}/a`)).status).toBe(503);
      // Redis comes back: every gateway reads the rules and is plainly ready.
      await down.restart();
      for (const g of gateways) {
        await vi.waitFor(
          async () => expect(await ready(g)).toEqual([200, { status: 'ready', store: 'redis' }]),
          {
            timeout: 10_000,
            interval: 100,
          },
        );
      }
    } finally {
      await Promise.all(gateways.map((g) => g.gateway.close()));
      await down.stop();
    }
  }, 40_000);
});
