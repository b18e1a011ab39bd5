import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type RedisServer, startRedisServer } from '../../../../test/support/redis-server.js';
import { definePolicy } from '../core/index.js';
import { CallTimeouts } from './call-timeout.js';
import { RedisStore, reconnectBackoff } from './index.js';
import { SCRIPT_SHA } from './lua-script.js';

const write = definePolicy({ name: 'rl.write', quota: 120, window: 60, burst: 3 });
let server: RedisServer;
const clients: Redis[] = [];

beforeAll(async () => {
  server = await startRedisServer();
});
afterAll(async () => {
  for (const c of clients) c.disconnect();
  await server?.stop();
});

/** A client that fails calls at once while Redis is down (no offline queue) and reconnects within 50 ms. */
function reconnecting(): Redis {
  const client = new Redis({
    host: server.host,
    port: server.port,
    enableOfflineQueue: false,
    retryStrategy: reconnectBackoff({ initialMs: 10, maxMs: 50 }),
  });
  client.on('error', () => {});
  clients.push(client);
  return client;
}

/** Waits (real time) until `check` holds; for state reached through real I/O (a kill, a restart, a reconnect). */
async function eventually(check: () => boolean | Promise<boolean>, what: string): Promise<void> {
  const deadline = Date.now() + 10_000;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

/** True once the server's script cache holds the store's script. */
async function scriptLoaded(): Promise<boolean> {
  const admin = new Redis({ host: server.host, port: server.port, lazyConnect: true });
  admin.on('error', () => {});
  try {
    await admin.connect();
    return ((await admin.script('EXISTS', SCRIPT_SHA)) as number[])[0] === 1;
  } catch {
    return false;
  } finally {
    admin.disconnect();
  }
}

describe('a Redis store whose connection reopens, with no request', () => {
  it('loads its script and leaves the failure mode at once, without waiting for a request or a probe', async () => {
    const client = reconnecting();
    // A probe an hour away: only the reopened connection can bring the store back in this test.
    const store = new RedisStore({
      client,
      failureMode: 'closed',
      timeoutMs: 2_000,
      breaker: { failureThreshold: 1, probeIntervalMs: 3_600_000 },
    });
    const c = [{ policy: write, key: 'reconnect:a' }];
    try {
      await eventually(() => client.status === 'ready', 'the client to connect');
      expect((await store.decide(c, 1)).allowed).toBe(true);
      await server.kill();
      await eventually(() => client.status !== 'ready', 'the client to notice');
      expect((await store.decide(c, 1)).reason).toBe('store_unavailable');
      expect(store.stats().state).toBe('fallback');
      await server.restart();
      const decisions = store.stats().decisions;
      await eventually(() => store.stats().state === 'redis', 'the store back on Redis');
      expect(await scriptLoaded()).toBe(true);
      expect(store.stats()).toMatchObject({ decisions, probes: 0, recoveries: 1, scriptReloads: 0 });
    } finally {
      store.close();
    }
  });

  it('forgets failures short of the switch once the connection reopens', async () => {
    const client = reconnecting();
    const store = new RedisStore({
      client,
      failureMode: 'closed',
      timeoutMs: 2_000,
      breaker: { failureThreshold: 3, probeIntervalMs: 3_600_000 },
    });
    const c = [{ policy: write, key: 'reconnect:b' }];
    try {
      await eventually(() => client.status === 'ready', 'the client to connect');
      await server.kill();
      await eventually(() => client.status !== 'ready', 'the client to notice');
      await store.decide(c, 1);
      await store.decide(c, 1);
      expect(store.stats()).toMatchObject({ state: 'redis', errors: 2 });
      await server.restart();
      // The store loaded its script on the new connection: Redis answered, so the two failures are history.
      await eventually(scriptLoaded, 'the script loaded on the new connection');
      await server.kill();
      await eventually(() => client.status !== 'ready', 'the client to notice');
      await store.decide(c, 1);
      expect(store.stats()).toMatchObject({ state: 'redis', errors: 3, failovers: 0 });
    } finally {
      store.close();
      await server.restart();
    }
  });
});

describe('the timeouts of calls in flight', () => {
  it('do not give up a call whose answer arrived while the event loop was busy', async () => {
    const client = reconnecting();
    await eventually(() => client.status === 'ready', 'the client to connect');
    const expired: string[] = [];
    const timeouts = new CallTimeouts<string>(20, (call) => expired.push(call.payload));
    // Sent from the end of one turn of the event loop, so that the timer is due first thing in the next turn.
    const { answered } = await new Promise<{ answered: Promise<boolean> }>((resolve) =>
      setImmediate(() => {
        const call = timeouts.start('ping');
        resolve({ answered: client.ping().then(() => timeouts.finish(call)) });
        // The thread is busy for 100 ms (a burst of requests): Redis answers meanwhile, the answer waits unread.
        const end = performance.now() + 100;
        while (performance.now() < end) {
          /* busy */
        }
      }),
    );
    expect(await answered).toBe(true);
    expect(expired).toEqual([]);
  });
});
