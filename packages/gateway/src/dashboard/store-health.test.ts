import { once } from 'node:events';
import { Redis } from 'ioredis';
import { definePolicy, Limiter, ManualClock } from 'sluice';
import { MemoryStore } from 'sluice/memory';
import { RedisStore } from 'sluice/redis';
import { afterAll, describe, expect, it } from 'vitest';
import { freePort, type RedisServer, startRedisServer } from '../../../../test/support/redis-server.js';
import { storeHealth } from './store-health.js';

const policy = definePolicy({ name: 'rl.read', quota: 60, window: 60, burst: 1 });
let server: RedisServer | undefined;
const clients: Redis[] = [];

afterAll(async () => {
  for (const c of clients) c.disconnect();
  await server?.stop();
});

function redisClient(port: number): Redis {
  const c = new Redis(port, '127.0.0.1', {
    maxRetriesPerRequest: 0,
    enableOfflineQueue: false,
    retryStrategy: () => 200,
  });
  c.on('error', () => undefined);
  clients.push(c);
  return c;
}

describe('storeHealth', () => {
  it('reads tracked keys, the cap and evictions of the memory store', () => {
    const clock = new ManualClock(0);
    const store = new MemoryStore({ clock, maxTrackedKeys: 2, sweepIntervalMs: 0 });
    const limiter = new Limiter({ policies: [policy], store });
    for (const k of ['a', 'b', 'c']) limiter.check('rl.read', k);
    expect(storeHealth(store, 'open', false)).toEqual({
      kind: 'memory',
      failureMode: 'open',
      failureModeActive: false,
      trackedKeys: 2,
      maxTrackedKeys: 2,
      evictions: 1,
      fullDropped: 0,
    });
    expect(storeHealth(store, 'open', true).failureModeActive).toBe(true);
  });

  it('reports a real Redis as answering, and the failure mode as active while Redis is unreachable', async () => {
    server = await startRedisServer();
    const upClient = redisClient(server.port);
    await once(upClient, 'ready');
    const up = new RedisStore({ client: upClient, failureMode: 'open' });
    await new Limiter({ policies: [policy], store: up }).check('rl.read', 'k');
    const healthy = storeHealth(up, 'open', false);
    expect(healthy.failureModeActive).toBe(false);
    expect(healthy.redis).toMatchObject({ state: 'redis', errors: 0, failovers: 0 });

    const down = new RedisStore({
      client: redisClient(await freePort()),
      failureMode: 'open',
      timeoutMs: 100,
      breaker: { failureThreshold: 1, probeIntervalMs: 60_000 },
    });
    const d = await new Limiter({ policies: [policy], store: down }).check('rl.read', 'k');
    expect(d.reason).toBe('store_unavailable_open');
    const failing = storeHealth(down, 'open', false);
    expect(failing.failureModeActive).toBe(true);
    expect(failing.redis?.state).toBe('fallback');
    expect(failing.redis?.failovers).toBe(1);
    await up.close();
    await down.close();
  });
});
