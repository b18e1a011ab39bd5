/**
 * Denials keep the connection. A 429 (or a 503 with the store down) of a request without a body, or with a small
 * one, leaves the keep-alive socket usable for the next request: closing it would make a pooled client (or NGINX
 * with upstream keepalive) fail another caller's request on the dead socket. Only a denied upload larger than the
 * drain bound closes, and the answer says `Connection: close` first. Every sequence runs on ONE raw socket.
 */
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { OneSocket } from '../../../test/support/one-socket.js';
import { type RedisServer, startRedisServer } from '../../../test/support/redis-server.js';
import {
  decisionEndpoint,
  startGateway,
  startUpstream,
  type TestGateway,
  type TestUpstream,
  tempDir,
} from './support.js';

// A generous tier for /x, and an endpoint limit of one for /limited/*, so that allow and deny alternate without
// waiting for a refill (Redis refills on its own clock).
const LIMITS = `rateLimiting:
  defaultTier: free
  tiers:
    free: { requestsPerMinute: 600, burstLimit: 100 }
  endpoints:
    - pattern: "/limited/*"
      limit: 1
      window: 60s
`;
const REDIS = `store:
  type: redis
  url: \${REDIS_URL}
  failureMode: closed
  timeout: 200ms
`;
const SMALL = JSON.stringify({ name: 'a small body', filler: 'x'.repeat(2_000) });
const JSON_BODY = { headers: { 'content-type': 'application/json' }, body: SMALL };

const tmp = tempDir();
let upstream: TestUpstream;
let redis: RedisServer;

beforeAll(async () => {
  upstream = await startUpstream();
  redis = await startRedisServer();
});
afterAll(async () => {
  await upstream.close();
  await redis.stop();
  tmp.cleanup();
});

async function gateway(name: string, yaml: string): Promise<TestGateway> {
  return startGateway(join(tmp.dir, `${name}.yaml`), {
    yaml: `${yaml}upstream:\n  url: ${upstream.url}\n`,
    env: { REDIS_URL: redis.url },
  });
}

/** Allow, deny, deny with a small body, allow: the statuses, with the socket checked open after each. */
async function allowDenyAllow(s: OneSocket): Promise<number[]> {
  const out: number[] = [];
  const step = async (method: string, path: string, init = {}) => {
    const r = await s.request(method, path, init);
    expect(r.headers.connection, `${method} ${path}`).not.toBe('close');
    out.push(r.status);
  };
  await step('GET', '/x');
  await step('GET', '/limited/a');
  await step('GET', '/limited/a');
  await step('POST', '/limited/a', JSON_BODY);
  await step('GET', '/x');
  await step('POST', '/x', JSON_BODY);
  expect(s.closed).toBe(false);
  return out;
}

describe.each(['memory', 'redis'])('the gateway on the %s store', (store) => {
  it('answers allow, deny, deny with a small body and allow on one socket', async () => {
    const t = await gateway(
      `seq-${store}`,
      store === 'redis' ? `${LIMITS}${REDIS}keys: { prefix: "ka-seq:" }\n` : LIMITS,
    );
    const s = await OneSocket.open(t.gateway.url);
    try {
      expect(await allowDenyAllow(s)).toEqual([200, 200, 429, 429, 200, 200]);
    } finally {
      s.close();
      await t.gateway.close();
    }
  });

  it('closes after denying a large unread upload, and says so first', async () => {
    const t = await gateway(
      `large-${store}`,
      store === 'redis' ? `${LIMITS}${REDIS}keys: { prefix: "ka-large:" }\n` : LIMITS,
    );
    const s = await OneSocket.open(t.gateway.url);
    try {
      expect((await s.request('GET', '/limited/b')).status).toBe(200);
      const denied = await s.request('POST', '/limited/b', {
        headers: { 'content-length': String(8 * 1024 * 1024) },
        body: Buffer.alloc(16 * 1024, 97),
      });
      expect(denied.status).toBe(429);
      expect(denied.headers.connection).toBe('close');
      await s.ended;
    } finally {
      s.close();
      await t.gateway.close();
    }
  });
});

describe('denials of uploads on the memory store', () => {
  const chunked = (parts: readonly string[]) =>
    Buffer.from(`${parts.map((p) => `${Buffer.byteLength(p).toString(16)}\r\n${p}\r\n`).join('')}0\r\n\r\n`);

  it('answers 429 to Expect: 100-continue without a 100 Continue first, and 100 Continue to an admitted one', async () => {
    const t = await gateway('expect', LIMITS);
    const s = await OneSocket.open(t.gateway.url);
    try {
      const expect100 = { 'content-type': 'application/json', expect: '100-continue' };
      const allowed = await s.request('POST', '/limited/c', {
        headers: expect100,
        body: SMALL,
        awaitContinue: true,
      });
      expect([allowed.status, allowed.interim]).toEqual([200, [100]]);
      expect(JSON.parse(allowed.body).bytes).toBe(Buffer.byteLength(SMALL));
      const denied = await s.request('POST', '/limited/c', {
        headers: expect100,
        body: SMALL,
        awaitContinue: true,
      });
      expect([denied.status, denied.interim]).toEqual([429, []]);
      // The body was never sent: the connection cannot carry another request, and says so.
      expect(denied.headers.connection).toBe('close');
      await s.ended;
    } finally {
      s.close();
      await t.gateway.close();
    }
  });

  it('reads and drops a small chunked body of a denied request, and serves the request pipelined behind it', async () => {
    const t = await gateway('chunked', LIMITS);
    const s = await OneSocket.open(t.gateway.url);
    try {
      expect((await s.request('GET', '/limited/d')).status).toBe(200);
      const te = { 'transfer-encoding': 'chunked', 'content-type': 'application/json' };
      // The next request goes out in the same write, right behind the denied body.
      const pipelined = `POST /x HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-length: ${Buffer.byteLength(SMALL)}\r\n\r\n${SMALL}`;
      const denied = await s.request('POST', '/limited/d', {
        headers: te,
        body: Buffer.concat([chunked([SMALL, SMALL]), Buffer.from(pipelined)]),
      });
      expect(denied.status).toBe(429);
      expect(denied.headers.connection).not.toBe('close');
      const next = await s.next();
      expect(next.status).toBe(200);
      expect(JSON.parse(next.body).bytes).toBe(Buffer.byteLength(SMALL));
      expect(s.closed).toBe(false);
      // Over the drain bound (1 MiB) the answer closes, and says so first.
      const big = await s.request('POST', '/limited/d', {
        headers: te,
        body: chunked(Array.from({ length: 300 }, () => 'y'.repeat(4096))),
      });
      expect(big.status).toBe(429);
      expect(big.headers.connection).toBe('close');
      await s.ended;
    } finally {
      s.close();
      await t.gateway.close();
    }
  });
  it('reads and drops a denied 200 KB body with Content-Length, and serves the request pipelined behind it', async () => {
    const t = await gateway('declared', LIMITS);
    const s = await OneSocket.open(t.gateway.url);
    try {
      expect((await s.request('GET', '/limited/f')).status).toBe(200);
      const body = Buffer.alloc(200 * 1024, 97);
      const pipelined = 'GET /x HTTP/1.1\r\nhost: 127.0.0.1\r\n\r\n';
      const denied = await s.request('POST', '/limited/f', {
        headers: { 'content-type': 'application/octet-stream', 'content-length': String(body.length) },
        body: Buffer.concat([body, Buffer.from(pipelined)]),
      });
      expect(denied.status).toBe(429);
      expect(denied.headers.connection).not.toBe('close');
      expect((await s.next()).status).toBe(200);
      expect(s.closed).toBe(false);
    } finally {
      s.close();
      await t.gateway.close();
    }
  });

  it('answers a denied chunked upload that stops arriving, and closes, instead of waiting for its end', async () => {
    const t = await gateway('stall', LIMITS);
    const s = await OneSocket.open(t.gateway.url);
    try {
      expect((await s.request('GET', '/limited/e')).status).toBe(200);
      // One chunk and never the last one: the denial may not wait on the client (only the drain time does).
      const denied = await s.request('POST', '/limited/e', {
        headers: { 'transfer-encoding': 'chunked', 'content-type': 'application/json' },
        body: `${Buffer.byteLength(SMALL).toString(16)}\r\n${SMALL}\r\n`,
      });
      expect(denied.status).toBe(429);
      expect(denied.headers.connection).toBe('close');
      await s.ended;
    } finally {
      s.close();
      await t.gateway.close();
    }
  });
});

describe('the gateway on Redis with the store down (failure mode closed)', () => {
  it('answers 503, 503 with a small body and its own endpoints on one socket', async () => {
    const t = await gateway('down', `${LIMITS}${REDIS}keys: { prefix: "ka-down:" }\n`);
    const s = await OneSocket.open(t.gateway.url);
    try {
      expect((await s.request('GET', '/x')).status).toBe(200);
      await redis.kill();
      const out: number[] = [];
      for (const [method, path, init] of [
        ['GET', '/x', {}],
        ['POST', '/x', JSON_BODY],
        ['GET', '/health', {}],
        ['GET', '/x', {}],
      ] as const) {
        const r = await s.request(method, path, init);
        expect(r.headers.connection).not.toBe('close');
        out.push(r.status);
      }
      expect(out).toEqual([503, 503, 200, 503]);
      expect(s.closed).toBe(false);
    } finally {
      s.close();
      await t.gateway.close();
      if (!redis.running) await redis.restart();
    }
  });
});

describe('the decision API', () => {
  async function decisionApi(name: string, yaml: string): Promise<TestGateway> {
    // The gateway starts the decision API of its decision: section itself.
    return gateway(name, `${yaml}decision:\n  port: 0\n`);
  }
  const ask = (uri: string, method = 'GET') => ({
    headers: { 'x-original-uri': uri, 'x-original-method': method, 'x-real-ip': '203.0.113.9' },
  });

  it('answers allow, deny, deny of a request with a small body and allow on one socket', async () => {
    const t = await decisionApi('decision', LIMITS);
    const s = await OneSocket.open(t.gateway.decisionUrl as string);
    try {
      const out: number[] = [];
      const path = new URL(decisionEndpoint(t.gateway)).pathname;
      for (const [method, init] of [
        ['GET', ask('/x')],
        ['GET', ask('/limited/a')],
        ['GET', ask('/limited/a')],
        ['POST', { headers: { ...ask('/limited/a', 'POST').headers, ...JSON_BODY.headers }, body: SMALL }],
        ['GET', ask('/x')],
      ] as const) {
        const r = await s.request(method, path, init);
        expect(r.headers.connection).not.toBe('close');
        out.push(r.status);
      }
      expect(out).toEqual([200, 200, 429, 429, 200]);
      expect(s.closed).toBe(false);
      // A large body nobody needs is not read: the answer closes the connection and says so.
      const large = await s.request('POST', path, {
        headers: { ...ask('/x').headers, 'content-length': String(8 * 1024 * 1024) },
        body: Buffer.alloc(16 * 1024, 97),
      });
      expect(large.status).toBe(200);
      expect(large.headers.connection).toBe('close');
      await s.ended;
    } finally {
      s.close();
      await t.gateway.close();
    }
  });

  it('answers 503 with the store down (failure mode closed) and keeps the socket', async () => {
    const t = await decisionApi('decision-down', `${LIMITS}${REDIS}keys: { prefix: "ka-dec:" }\n`);
    const s = await OneSocket.open(t.gateway.decisionUrl as string);
    const path = new URL(decisionEndpoint(t.gateway)).pathname;
    try {
      expect((await s.request('GET', path, ask('/x'))).status).toBe(200);
      await redis.kill();
      const out: number[] = [];
      for (const [method, init] of [
        ['GET', ask('/x')],
        ['POST', { headers: ask('/x', 'POST').headers, body: SMALL }],
        ['GET', ask('/x')],
      ] as const) {
        const r = await s.request(method, path, init);
        expect(r.headers.connection).not.toBe('close');
        out.push(r.status);
      }
      expect(out).toEqual([503, 503, 503]);
      expect(s.closed).toBe(false);
    } finally {
      s.close();
      await t.gateway.close();
      if (!redis.running) await redis.restart();
    }
  });
});
