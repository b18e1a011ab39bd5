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
