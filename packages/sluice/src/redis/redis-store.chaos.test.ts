import { Cluster, Redis } from 'ioredis';
import { afterEach, describe, expect, it } from 'vitest';
import { redisCli, startRedisCluster, startRedisServer } from '../../../../test/support/redis-server.js';
import { type Decision, definePolicy, ManualClock } from '../core/index.js';
import { RedisStore, reconnectBackoff } from './index.js';

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

  it('is back on Redis within one probe interval of the client reconnecting (counted in decisions)', async () => {
    // The client settings the gateway uses (packages/gateway/src/store/create-store.ts): no offline queue, a
    // reconnect backoff of 50 ms doubling to 500 ms, a connect timeout. The store runs on a ManualClock that the
    // test moves STEP ms per decision, so the probe interval is counted in the store's own time and decisions.
    const PROBE_MS = 250;
    const STEP_MS = 5;
    const server = await startRedisServer();
    const client = new Redis({
      host: server.host,
      port: server.port,
      enableOfflineQueue: false,
      connectTimeout: 1000,
      retryStrategy: reconnectBackoff({ initialMs: 50, maxMs: 500 }),
    });
    client.on('error', () => {});
    await new Promise((resolve) => client.once('ready', resolve));
    const clock = new ManualClock(1_700_000_000_000);
    const store = new RedisStore({
      client,
      clock,
      failureMode: 'local',
      nodeCount: 2,
      timeoutMs: 1_000,
      breaker: { probeIntervalMs: PROBE_MS },
    });
    const keys = ['a', 'b', 'c'];
    let i = 0;
    // One decision per step, then a real millisecond for sockets and timers (the reconnect, the probe's answer).
    const step = async () => {
      clock.advance(STEP_MS);
      await store.decide([{ policy, key: keys[i++ % keys.length] }], 1);
      await new Promise((r) => setTimeout(r, 1));
    };
    const until = async (check: () => boolean, what: string, max = 20_000) => {
      for (let n = 0; !check(); n++) {
        if (n >= max) throw new Error(`no ${what} after ${max} decisions`);
        await step();
      }
    };
    let ready: { at: number; wall: number; fallback: number; probes: number } | undefined;
    let recovered: { at: number; wall: number; fallback: number; probes: number } | undefined;
    const snapshot = () => ({
      at: clock.now(),
      wall: performance.now(),
      fallback: store.stats().fallbackDecisions,
      probes: store.stats().probes,
    });
    store.on('recover', () => {
      recovered = snapshot();
    });
    try {
      await until(() => store.stats().redisDecisions >= 50, 'decisions from Redis');
      await server.kill();
      await until(() => store.stats().state === 'fallback', 'switch to the failure mode');
      // Down long enough for the reconnect backoff to reach its cap: the slowest return the settings allow.
      let longestBackoff = 0;
      client.on('reconnecting', (ms: number) => {
        longestBackoff = Math.max(longestBackoff, ms);
      });
      client.on('ready', () => {
        ready = snapshot();
      });
      await until(
        () => store.stats().fallbackDecisions >= 100 && longestBackoff === 500,
        'local decisions while down, and reconnect attempts 500 ms apart',
      );
      await server.restart();
      const restarted = snapshot();
      await until(() => recovered !== undefined, 'recovery');
      const back = recovered as NonNullable<typeof recovered>;
      // The probe that brought the store back may have been answered while the client was still finishing its
      // handshake, before 'ready': then nothing at all was answered locally after the client was ready.
      const from = ready !== undefined && ready.at >= restarted.at && ready.at <= back.at ? ready : back;
      const afterReady = back.fallback - from.fallback;
      const storeMs = back.at - from.at;
      console.log(
        `recovery: ${back.fallback - restarted.fallback} decisions by the failure mode and ` +
          `${Math.round(back.wall - restarted.wall)} ms (wall) from redis-server answering again to decisions ` +
          `from Redis (reconnect backoff included); ${afterReady} decisions and ${storeMs} ms (store clock, ` +
          `probe interval ${PROBE_MS} ms) from the client being ready; ${back.probes - restarted.probes} probe(s)`,
      );
      // Within one probe interval of store time after the client is ready, plus the decisions made while the
      // probe's PING was in flight (each waits a real millisecond): one due probe is enough.
      expect(back.probes - from.probes).toBeLessThanOrEqual(1);
      expect(afterReady).toBeLessThanOrEqual(PROBE_MS / STEP_MS + 50);
      const fromRedis = store.stats().redisDecisions;
      await until(() => store.stats().redisDecisions > fromRedis + 20, 'decisions from Redis again');
      expect(store.stats()).toMatchObject({ state: 'redis', failovers: 1, recoveries: 1 });
    } finally {
      client.disconnect();
      await server.stop();
    }
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
