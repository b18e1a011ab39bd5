import { Cluster, Redis } from 'ioredis';
import { afterEach, describe, expect, it } from 'vitest';
import { redisCli, startRedisCluster, startRedisServer } from '../../../../test/support/redis-server.js';
import { type Decision, definePolicy } from '../core/index.js';
import { RedisStore } from './index.js';

const policy = definePolicy({ name: 'rl.chaos', quota: 100_000, window: 1, burst: 100_000 });

/** Waits (real time) for state that arrives through real I/O: a process restart, a reconnect, an election. */
async function eventually(check: () => boolean, what: string, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 5));
  }
}

/** Concurrent callers deciding in a loop until stopped; every outcome and every thrown error is kept. */
function load(store: RedisStore, keys: readonly string[], concurrency = 16) {
  let running = true;
  const reasons = new Map<string, number>();
  const errors: unknown[] = [];
  const workers = Array.from({ length: concurrency }, async (_, w) => {
    for (let i = 0; running; i++) {
      try {
        const d: Decision = await store.decide([{ policy, key: keys[(w + i) % keys.length] }], 1);
        reasons.set(d.reason, (reasons.get(d.reason) ?? 0) + 1);
      } catch (error) {
        errors.push(error);
      }
      // Fallback answers come synchronously; yield so timers and sockets (the reconnect) still run.
      await new Promise((r) => setImmediate(r));
    }
  });
  return {
    reasons,
    errors,
    async stop() {
      running = false;
      await Promise.all(workers);
    },
  };
}

const unhandled: unknown[] = [];
const onUnhandled = (reason: unknown) => unhandled.push(reason);
process.on('unhandledRejection', onUnhandled);
afterEach(() => {
  expect(unhandled).toEqual([]);
});

describe('RedisStore under chaos (real redis-server processes)', () => {
  it('keeps deciding through a kill and restart of redis-server, and is back on Redis within a second', async () => {
    const server = await startRedisServer();
    const client = new Redis({
      host: server.host,
      port: server.port,
      enableOfflineQueue: false,
      retryStrategy: () => 20,
    });
    client.on('error', () => {});
    // Without an offline queue, calls fail until the connection is up: start the load once it is.
    await new Promise((resolve) => client.once('ready', resolve));
    const store = new RedisStore({
      client,
      failureMode: 'local',
      nodeCount: 2,
      breaker: { probeIntervalMs: 100 },
    });
    const run = load(store, ['a', 'b', 'c']);
    try {
      await eventually(() => store.stats().redisDecisions > 200, 'decisions from Redis');
      await server.kill();
      await eventually(() => store.stats().state === 'fallback', 'the switch to the failure mode');
      const fallbackAtSwitch = store.stats().fallbackDecisions;
      await eventually(
        () => store.stats().fallbackDecisions > fallbackAtSwitch + 200,
        'local decisions while down',
      );
      // Local mode decides for real (in memory), it never answers with an outage reason.
      expect(run.reasons.get('store_unavailable') ?? 0).toBe(0);
      expect(store.stats().state).toBe('fallback');

      await server.restart();
      const back = performance.now();
      const fromRedis = store.stats().redisDecisions;
      await eventually(
        () => store.stats().state === 'redis' && store.stats().redisDecisions > fromRedis,
        'decisions from Redis again',
      );
      expect(performance.now() - back).toBeLessThan(1_000);
      expect(store.stats()).toMatchObject({ failovers: 1, recoveries: 1 });
      // The restarted server has an empty script cache: NOSCRIPT was recovered on the way.
      expect(store.stats().scriptReloads).toBeGreaterThanOrEqual(1);
    } finally {
      await run.stop();
      client.disconnect();
      await server.stop();
    }
    expect(run.errors).toEqual([]);
  });

  it('recovers from SCRIPT FLUSH under load without a single failed decision', async () => {
    const server = await startRedisServer();
    const client = new Redis({ host: server.host, port: server.port });
    // A generous timeout: this test is about NOSCRIPT, not about a slow machine.
    const store = new RedisStore({ client, failureMode: 'closed', timeoutMs: 2_000 });
    const run = load(store, ['x', 'y']);
    try {
      for (let i = 0; i < 5; i++) {
        const before = store.stats().redisDecisions;
        await eventually(() => store.stats().redisDecisions > before + 50, 'decisions');
        await redisCli(server.port, 'SCRIPT', 'FLUSH');
      }
      const before = store.stats().redisDecisions;
      await eventually(() => store.stats().redisDecisions > before + 50, 'decisions after the last flush');
    } finally {
      await run.stop();
      await client.quit();
      await server.stop();
    }
    expect(run.errors).toEqual([]);
    expect(run.reasons.get('store_unavailable') ?? 0).toBe(0);
    expect(store.stats()).toMatchObject({ errors: 0, fallbackDecisions: 0 });
    expect(store.stats().scriptReloads).toBeGreaterThanOrEqual(5);
  });

  it('recovers when a Cluster master holding the key is killed and its replica takes over', async () => {
    const cluster = await startRedisCluster({ replicasPerMaster: 1, nodeTimeoutMs: 500 });
    const client = new Cluster([...cluster.startupNodes], {
      slotsRefreshInterval: 100,
      clusterRetryStrategy: () => 20,
      enableOfflineQueue: false,
      redisOptions: { connectTimeout: 500 },
    });
    client.on('error', () => {});
    const store = new RedisStore({ client, failureMode: 'open', breaker: { probeIntervalMs: 100 } });
    const key = 'hot';
    const run = load(store, [key], 8);
    try {
      await eventually(() => store.stats().redisDecisions > 100, 'decisions from the Cluster');
      const port = await cluster.portForKey(store.keyOf(policy, key));
      const master = cluster.nodes.find((n) => n.port === port)!;
      await master.kill();
      await eventually(
        () => store.stats().fallbackDecisions > 0,
        'the failure mode while the master is gone',
      );
      // The replica is promoted once the others agree the master failed (cluster-node-timeout 500 ms).
      let promoted = port;
      const deadline = Date.now() + 15_000;
      while (promoted === port && Date.now() < deadline) {
        await new Promise((r) => setTimeout(r, 50));
        promoted = await cluster.portForKey(store.keyOf(policy, key)).catch(() => port);
      }
      expect(promoted).not.toBe(port);
      const fromRedis = store.stats().redisDecisions;
      await eventually(
        () => store.stats().state === 'redis' && store.stats().redisDecisions > fromRedis + 100,
        'decisions from the promoted replica',
      );
    } finally {
      await run.stop();
      client.disconnect();
      await cluster.stop();
    }
    expect(run.errors).toEqual([]);
  }, 40_000);
});
