import { type ChildProcess, spawn } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  freePort,
  type RedisServer,
  redisCli,
  startRedisCluster,
  startRedisServer,
} from '../../../test/support/redis-server.js';
import { toolPath } from '../../../test/support/tools.js';
import {
  client,
  send,
  startGateway,
  startUpstream,
  statuses,
  type TestGateway,
  type TestUpstream,
  tempDir,
} from './support.js';

const tmp = tempDir();
const agent = client();
let upstream: TestUpstream;
let redis: RedisServer;

beforeAll(async () => {
  upstream = await startUpstream();
  redis = await startRedisServer();
});
afterAll(async () => {
  await upstream.close();
  await agent.close();
  await redis.stop();
  tmp.cleanup();
});

// One token per minute and a burst of 3: no refill can happen while the test runs on Redis's own clock.
const config = (failureMode: string) => `rateLimiting:
  defaultTier: free
  tiers:
    free: { requestsPerMinute: 1, burstLimit: 3 }
store:
  type: redis
  url: \${REDIS_URL}
  failureMode: ${failureMode}
  timeout: 200ms
keys: { prefix: "gw-test-${failureMode}:" }
`;

async function pair(failureMode: string): Promise<[TestGateway, TestGateway]> {
  const env = { REDIS_URL: redis.url };
  const a = await startGateway(join(tmp.dir, `a-${failureMode}.yaml`), {
    yaml: config(failureMode),
    env,
    overrides: { upstream: upstream.url },
  });
  const b = await startGateway(join(tmp.dir, `b-${failureMode}.yaml`), {
    yaml: config(failureMode),
    env,
    overrides: { upstream: upstream.url },
  });
  return [a, b];
}

describe('the Redis store', () => {
  it('shares limits between gateways, reports ready, and follows the failure mode when Redis is gone', async () => {
    const [a, b] = await pair('closed');
    try {
      expect((await send(agent, `${a.gateway.url}/ready`)).json()).toEqual({
        status: 'ready',
        store: 'redis',
      });
      expect(await statuses(agent, `${a.gateway.url}/x`, 2)).toEqual([200, 200]);
      const third = await send(agent, `${b.gateway.url}/x`);
      expect(third.status).toBe(200);
      expect(third.headers.ratelimit).toBe('"free";r=0;t=180');
      expect((await send(agent, `${a.gateway.url}/x`)).status).toBe(429);
      expect((await send(agent, `${b.gateway.url}/x`)).status).toBe(429);
      // The admin view and reset go through the shared store. (Another gateway may still answer from its local
      // deny cache until that entry's Retry-After passes.)
      expect((await b.gateway.inspect('ip:127.0.0.1'))[0]).toMatchObject({ policy: 'free', remaining: 0 });
      await a.gateway.resetKey('ip:127.0.0.1');
      expect((await send(agent, `${a.gateway.url}/x`)).status).toBe(200);
      await redis.kill();
      const down = await send(agent, `${a.gateway.url}/x`);
      expect(down.status).toBe(503);
      expect(down.json()).toMatchObject({ status: 503, code: 'rate_limiter_unavailable' });
      expect((await send(agent, `${a.gateway.url}/ready`)).status).toBe(503);
    } finally {
      await a.gateway.close();
      await b.gateway.close();
      if (!redis.running) await redis.restart();
    }
  });

  it('admits while Redis is gone when the failure mode is open', async () => {
    const [a, b] = await pair('open');
    try {
      await redis.kill();
      expect(await statuses(agent, `${a.gateway.url}/x`, 5)).toEqual([200, 200, 200, 200, 200]);
      // A gateway that admits through the outage stays in its Service: were every replica to leave it, the open
      // failure mode would become a total outage.
      const ready = await send(agent, `${a.gateway.url}/ready`);
      expect(ready.status).toBe(200);
      expect(ready.json()).toEqual({ status: 'degraded', store: 'redis', failureMode: 'open' });
    } finally {
      await a.gateway.close();
      await b.gateway.close();
      if (!redis.running) await redis.restart();
    }
  });
});

describe('Redis topologies', () => {
  const tiers = `rateLimiting:
  defaultTier: free
  tiers:
    free: { requestsPerMinute: 1, burstLimit: 2 }
`;

  it('uses a Redis Cluster given its seed nodes', async () => {
    const cluster = await startRedisCluster();
    const nodes = cluster.startupNodes.map((n) => `"redis://${n.host}:${n.port}"`).join(', ');
    const t = await startGateway(join(tmp.dir, 'cluster.yaml'), {
      yaml: `${tiers}store: { type: redis, cluster: { nodes: [${nodes}] }, failureMode: closed, timeout: 500ms }\n`,
      overrides: { upstream: upstream.url },
    });
    try {
      expect(await statuses(agent, `${t.gateway.url}/x`, 3)).toEqual([200, 200, 429]);
      expect((await send(agent, `${t.gateway.url}/ready`)).status).toBe(200);
    } finally {
      await t.gateway.close();
      await cluster.stop();
    }
  });

  it('finds the master through Sentinel', async () => {
    const master = await startRedisServer();
    const port = await freePort();
    const conf = join(tmp.dir, 'sentinel.conf');
    writeFileSync(
      conf,
      `port ${port}\nbind 127.0.0.1\nsentinel monitor gwmaster 127.0.0.1 ${master.port} 1\n`,
    );
    const sentinel: ChildProcess = spawn(toolPath('redis-server'), [conf, '--sentinel'], { stdio: 'ignore' });
    try {
      // Sentinel answers once it has read its configuration.
      for (let i = 0; ; i++) {
        const reply = await redisCli(port, 'SENTINEL', 'get-master-addr-by-name', 'gwmaster').catch(() => '');
        if (reply.includes(String(master.port))) break;
        if (i > 100) throw new Error('sentinel did not come up');
        await new Promise((r) => setTimeout(r, 50));
      }
      const t = await startGateway(join(tmp.dir, 'sentinel.yaml'), {
        yaml: `${tiers}store: { type: redis, sentinel: { name: gwmaster, nodes: ["127.0.0.1:${port}"] }, failureMode: closed, timeout: 500ms }\n`,
        overrides: { upstream: upstream.url },
      });
      try {
        expect(await statuses(agent, `${t.gateway.url}/x`, 3)).toEqual([200, 200, 429]);
        expect(await redisCli(master.port, 'DBSIZE')).not.toBe('0');
      } finally {
        await t.gateway.close();
      }
    } finally {
      sentinel.kill('SIGKILL');
      await master.stop();
    }
  });
});

// Recovery and reload on a real redis-server killed and started again on its port. The gateway's Redis store reads
// the server's clock, so its probe runs on real time: the waits poll a condition with a short deadline (the gauge,
// read from the registry without touching the store), never a fixed sleep.

/** A seal endpoint at 5 per hour (no refill during a run), the tier far above it; clients told apart by XFF. */
const sealConfig = (failureMode: string, prefix: string, nodeCount = 1, sealLimit = 5) => `rateLimiting:
  defaultTier: free
  tiers:
    free: { requestsPerMinute: 100000, burstLimit: 100000 }
  endpoints:
    - { pattern: /system/airgap/seal, limit: ${sealLimit}, window: 1h }
server: { trustedProxies: [loopback] }
store:
  type: redis
  url: \${REDIS_URL}
  failureMode: ${failureMode}
  nodeCount: ${nodeCount}
  timeout: 2s # a busy machine must not time calls of a burst out: that would switch back to the failure mode
keys: { prefix: "${prefix}:" }
`;

const from = (ip: string) => ({ 'x-forwarded-for': ip });

/** The failure mode gauge as the gateway's own registry holds it (a scrape does not touch the store). */
async function gauge(t: TestGateway): Promise<number | undefined> {
  const line = (await t.gateway.scrape())
    .split('\n')
    .find((l) => l.startsWith('sluice_store_failure_mode_active{'));
  return line === undefined ? undefined : Number(line.slice(line.lastIndexOf(' ') + 1));
}

/** Polls `check` (no request through the proxy) until it holds, for at most `ms` of real time. */
async function until(check: () => Promise<boolean>, what: string, ms = 3_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out after ${ms} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** `n` concurrent requests for the seal endpoint from client `ip`, spread over `gateways`; their statuses. */
async function burst(gateways: TestGateway[], ip: string, n: number): Promise<number[]> {
  const replies = await Promise.all(
    Array.from({ length: n }, (_, i) =>
      send(agent, `${gateways[i % gateways.length].gateway.url}/system/airgap/seal`, { headers: from(ip) }),
    ),
  );
  return replies.map((r) => r.status);
}

/** Kills Redis, sends requests until every gateway is in its failure mode, and starts Redis again. */
async function outage(gateways: TestGateway[]): Promise<void> {
  await redis.kill();
  for (const t of gateways) {
    await statuses(agent, `${t.gateway.url}/system/airgap/seal`, 12, from('198.51.100.1'));
    expect(await gauge(t)).toBe(1);
  }
  await redis.restart();
}

describe('recovery without traffic', () => {
  for (const mode of ['open', 'local', 'closed']) {
    it(`${mode}: the gauge reads 0 and /ready answers 200 with no request, and the next burst admits exactly 5`, async () => {
      const t = await startGateway(join(tmp.dir, `recover-${mode}.yaml`), {
        yaml: sealConfig(mode, `recover-${mode}`),
        env: { REDIS_URL: redis.url },
        overrides: { upstream: upstream.url },
      });
      try {
        expect(await gauge(t)).toBe(0);
        await outage([t]);
        const restarted = Date.now();
        await until(async () => (await gauge(t)) === 0, 'the failure mode gauge at 0');
        console.log(`${mode}: gauge back at 0 ${Date.now() - restarted} ms after redis-server answered`);
        expect((await send(agent, `${t.gateway.url}/ready`)).status).toBe(200);
        const codes = await burst([t], '198.51.100.2', 200);
        expect(codes.filter((c) => c === 200)).toHaveLength(5);
        expect(codes.filter((c) => c === 429)).toHaveLength(195);
      } finally {
        await t.gateway.close();
        if (!redis.running) await redis.restart();
      }
    }, 30_000);
  }

  it('three local-mode gateways with nodeCount 3: the burst after the restart admits exactly 5 over all of them', async () => {
    const fleet: TestGateway[] = [];
    try {
      for (const name of ['a', 'b', 'c']) {
        fleet.push(
          await startGateway(join(tmp.dir, `fleet-${name}.yaml`), {
            yaml: sealConfig('local', 'recover-fleet', 3),
            env: { REDIS_URL: redis.url },
            overrides: { upstream: upstream.url },
          }),
        );
      }
      await outage(fleet);
      for (const t of fleet) await until(async () => (await gauge(t)) === 0, 'every gauge at 0');
      const codes = await burst(fleet, '198.51.100.3', 60);
      expect(codes.filter((c) => c === 200)).toHaveLength(5);
    } finally {
      for (const t of fleet) await t.gateway.close();
      if (!redis.running) await redis.restart();
    }
  }, 30_000);
});

describe('reload on Redis', () => {
  it('a limit changed from 5 to 8 per hour while a key is exhausted starts full; an unchanged one keeps its state', async () => {
    const file = join(tmp.dir, 'reload.yaml');
    const t = await startGateway(file, {
      yaml: sealConfig('closed', 'reload-change'),
      env: { REDIS_URL: redis.url },
      overrides: { upstream: upstream.url },
    });
    const seal = `${t.gateway.url}/system/airgap/seal`;
    try {
      const exhausted = await statuses(agent, seal, 6, from('198.51.100.4'));
      expect(exhausted).toEqual([200, 200, 200, 200, 200, 429]);
      // A reload that changes nothing keeps the bucket (and the denial).
      expect((await t.gateway.reload()).ok).toBe(true);
      expect((await send(agent, seal, { headers: from('198.51.100.4') })).status).toBe(429);
      writeFileSync(file, sealConfig('closed', 'reload-change', 1, 8));
      expect((await t.gateway.reload()).ok).toBe(true);
      const after = await statuses(agent, seal, 9, from('198.51.100.4'));
      expect(after).toEqual([...Array(8).fill(200), 429]);
    } finally {
      await t.gateway.close();
    }
  }, 30_000);
});
