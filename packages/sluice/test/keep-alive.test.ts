/**
 * Denials keep the connection: on each of the four adapters, allowed and denied requests (with and without a
 * small body) follow each other on ONE keep-alive socket, and the socket is still open at the end. A denial of a
 * large upload that has not been read is the one case that closes, and it says so with `Connection: close`.
 */
import { Redis } from 'ioredis';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { OneSocket } from '../../../test/support/one-socket.js';
import { type RedisServer, startRedisServer } from '../../../test/support/redis-server.js';
import { Limiter, ManualClock, type PolicyOptions, type RateLimitStore } from '../src/core/index.js';
import { createHttpLimiter } from '../src/http/index.js';
import { MemoryStore } from '../src/memory/index.js';
import { RedisStore } from '../src/redis/index.js';
import { ADAPTERS, type RunningApp, startApp } from './support/adapter-apps.js';

const POLICIES: PolicyOptions[] = [
  { name: 'rl.read', quota: 60, window: 60, burst: 2 },
  { name: 'rl.write', quota: 60, window: 60, burst: 1 },
];

function limiterOver(store: RateLimitStore) {
  return createHttpLimiter({
    limiter: new Limiter({ policies: POLICIES, store }),
    rules: [
      { methods: 'GET', path: '/api/*', policies: ['rl.read'] },
      { methods: 'POST', path: '/api/*', policies: ['rl.write'] },
    ],
  });
}

const running: (RunningApp | OneSocket)[] = [];
afterEach(async () => {
  for (const r of running.splice(0)) {
    if (r instanceof OneSocket) r.close();
    else await r.close();
  }
});

const SMALL = JSON.stringify({ name: 'a small body', filler: 'x'.repeat(2_000) });
const JSON_BODY = { headers: { 'content-type': 'application/json' }, body: SMALL };

describe.each(ADAPTERS)('%s adapter: denials keep the connection', (adapter) => {
  it('answers allow, deny, deny with a small body and allow again on one socket', async () => {
    const clock = new ManualClock(0);
    const app = await startApp(adapter, limiterOver(new MemoryStore({ clock, sweepIntervalMs: 0 })));
    running.push(app);
    const s = await OneSocket.open(app.url);
    running.push(s);
    const statuses: number[] = [];
    const get = async () => (await s.request('GET', '/api/items/7')).status;
    const post = async () =>
      (
        await s.request('POST', '/api/items', {
          headers: { 'content-type': 'application/json' },
          body: SMALL,
        })
      ).status;
    statuses.push(await get(), await get());
    const denied = await s.request('GET', '/api/items/7');
    statuses.push(denied.status);
    expect(denied.headers.connection).not.toBe('close');
    statuses.push(await post());
    const deniedPost = await s.request('POST', '/api/items', JSON_BODY);
    statuses.push(deniedPost.status);
    expect(deniedPost.headers.connection).not.toBe('close');
    statuses.push((await s.request('GET', '/health')).status);
    clock.advance(1_000);
    statuses.push(await get());
    expect(statuses).toEqual([200, 200, 429, 201, 429, 200, 200]);
    expect(s.closed).toBe(false);
  });

  it('closes after denying a large unread upload, and says so', async () => {
    const clock = new ManualClock(0);
    const app = await startApp(adapter, limiterOver(new MemoryStore({ clock, sweepIntervalMs: 0 })));
    running.push(app);
    const s = await OneSocket.open(app.url);
    running.push(s);
    expect((await s.request('POST', '/api/items', JSON_BODY)).status).toBe(201);
    // Declares 8 MiB and sends the first 16 KiB: the denial must not wait for (or read) the rest.
    const denied = await s.request('POST', '/api/items', {
      headers: { 'content-type': 'application/json', 'content-length': String(8 * 1024 * 1024) },
      body: Buffer.alloc(16 * 1024, 97),
    });
    expect(denied.status).toBe(429);
    expect(denied.headers.connection).toBe('close');
    await s.ended;
  });
});

describe('denials with the store down (failure mode closed) keep the connection', () => {
  // A real redis-server, killed before the test: its port then refuses connections, as a crashed Redis does.
  let redis: RedisServer;
  beforeAll(async () => {
    redis = await startRedisServer();
    await redis.kill();
  });
  afterAll(async () => {
    await redis.stop();
  });

  it.each(ADAPTERS)('%s adapter: 503, exempt 200, 503 with a small body on one socket', async (adapter) => {
    const client = new Redis({
      host: redis.host,
      port: redis.port,
      enableOfflineQueue: false,
      retryStrategy: () => 50,
    });
    client.on('error', () => {});
    // Without an offline queue every call fails at once while Redis is down.
    const store = new RedisStore({ client, failureMode: 'closed' });
    const app = await startApp(adapter, limiterOver(store));
    running.push(app);
    const s = await OneSocket.open(app.url);
    running.push(s);
    try {
      const statuses: number[] = [];
      statuses.push((await s.request('GET', '/api/items/7')).status);
      statuses.push((await s.request('GET', '/health')).status);
      statuses.push((await s.request('POST', '/api/items', JSON_BODY)).status);
      statuses.push((await s.request('GET', '/health')).status);
      expect(statuses).toEqual([503, 200, 503, 200]);
      expect(s.closed).toBe(false);
    } finally {
      client.disconnect();
    }
  });
});
