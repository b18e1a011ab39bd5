import { once } from 'node:events';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { REDIS_HOST, type RedisServer, startRedisServer } from '../../../../test/support/redis-server.js';
import { Limiter, type OverrideChange, type OverrideInput, parseOverride } from '../core/index.js';
import { createHttpLimiter } from '../http/index.js';
import { RedisOverrides, RedisStore } from './index.js';

let server: RedisServer;
const clients: Redis[] = [];
const opened: RedisOverrides[] = [];
let prefixes = 0;

async function client(): Promise<Redis> {
  const r = new Redis(server.port, REDIS_HOST, { enableOfflineQueue: false, maxRetriesPerRequest: 0 });
  await once(r, 'ready');
  clients.push(r);
  return r;
}

beforeAll(async () => {
  server = await startRedisServer();
});

afterAll(async () => {
  for (const o of opened) o.close();
  for (const c of clients) c.disconnect();
  await server?.stop();
});

/** Two gateways on one Redis, each with its own connection, override cache and limiter. */
async function twoGateways() {
  const prefix = `o${++prefixes}:`;
  let wall = Date.now();
  const gateway = async () => {
    const redis = await client();
    const overrides = new RedisOverrides({ client: redis, prefix, wallClock: () => wall });
    opened.push(overrides);
    const limiter = new Limiter({
      policies: [{ name: 'rl.read', quota: 60, window: 60, burst: 2 }],
      store: new RedisStore({ client: redis, prefix, timeoutMs: 10_000 }),
    });
    const http = createHttpLimiter({
      limiter,
      rules: [{ name: 'all', policies: ['rl.read'], key: 'caller' }],
      wallClock: () => wall,
      overrides,
    });
    return { overrides, http };
  };
  const change = (id: string, action: 'set' | 'remove' = 'set', reason = 'r'): OverrideChange => ({
    action,
    id,
    who: 'ops',
    at: wall,
    reason,
  });
  const rule = (input: OverrideInput) => parseOverride(input, wall, 'ops');
  return {
    a: await gateway(),
    b: await gateway(),
    change,
    rule,
    advance: (ms: number) => {
      wall += ms;
    },
  };
}

const req = {
  method: 'GET',
  path: '/',
  headers: {},
  remoteAddress: '198.51.100.4',
  identity: { tenant: 't', client: 'c' },
};

describe('RedisOverrides', () => {
  it('applies a rule set on one gateway on a second one within 1 s, and ends it on time', async () => {
    const { a, b, change, rule, advance } = await twoGateways();
    const r = rule({ pattern: 'tenant:t', quota: 600, window: 60, ttlSeconds: 30, reason: 'launch' });
    await a.overrides.set(r, change(r.id));
    // Within 1 s of the write, by the second gateway's own background refresh.
    await vi.waitFor(() => expect(b.overrides.snapshot().rules.map((x) => x.id)).toEqual(['tenant:t']), {
      timeout: 1000,
      interval: 10,
    });
    const v = await b.http.evaluate(req);
    expect(v.headers.find(([n]) => n === 'RateLimit-Policy')?.[1]).toBe('"rl.read";q=600;w=60');
    advance(30_000);
    const after = await b.http.evaluate(req);
    expect(after.headers.find(([n]) => n === 'RateLimit-Policy')?.[1]).toBe('"rl.read";q=60;w=60');
  });

  it('sees a removal everywhere and keeps the history in order with the reasons', async () => {
    const { a, b, change, rule } = await twoGateways();
    const block = rule({ pattern: 'ip:198.51.100.0/24', block: 403, reason: 'scanner' });
    await a.overrides.set(block, change(block.id, 'set', 'scanner'));
    // Polled on the cache, not by requests: a request before the rule arrives would take a token.
    await vi.waitFor(() => expect(b.overrides.snapshot().rules).toHaveLength(1), {
      timeout: 1000,
      interval: 10,
    });
    expect((await b.http.evaluate(req)).status).toBe(403);
    const removed = await b.overrides.remove(block.id, change(block.id, 'remove', 'false alarm'));
    expect(removed).toEqual(block);
    expect(await a.overrides.remove(block.id, change(block.id, 'remove', 'again'))).toBeUndefined();
    await vi.waitFor(() => expect(a.overrides.snapshot().rules).toHaveLength(0), {
      timeout: 1000,
      interval: 10,
    });
    expect((await a.http.evaluate(req)).status).toBe(200);
    const history = await a.overrides.history();
    expect(history.map((h) => [h.action, h.reason])).toEqual([
      ['set', 'scanner'],
      ['remove', 'false alarm'],
    ]);
    expect(history[1].rule).toEqual(block);
  });

  it('drops expired rules on the next write', async () => {
    const { a, change, rule, advance } = await twoGateways();
    const short = rule({ pattern: 'k1', unlimited: true, ttlSeconds: 1, reason: 'x' });
    await a.overrides.set(short, change(short.id));
    advance(2000);
    const next = rule({ pattern: 'k2', unlimited: true, reason: 'x' });
    await a.overrides.set(next, change(next.id));
    expect(a.overrides.snapshot().rules.map((r) => r.id)).toEqual(['k2']);
  });

  it('follows a Redis that came back with an older version (restored from an earlier snapshot)', async () => {
    const { a, change, rule } = await twoGateways();
    for (const p of ['k1', 'k2', 'k3']) {
      const r = rule({ pattern: p, unlimited: true, reason: 'x' });
      await a.overrides.set(r, change(r.id));
    }
    expect(a.overrides.snapshot().version).toBe(3);
    const prefix = `o${prefixes}:{overrides}:`;
    const older = rule({ pattern: 'k0', unlimited: true, reason: 'restored' });
    const redis = clients[0];
    await redis.del(`${prefix}rules`);
    await redis.hset(`${prefix}rules`, older.id, JSON.stringify(older));
    await redis.set(`${prefix}version`, '1');
    await vi.waitFor(() => expect(a.overrides.snapshot().rules.map((r) => r.id)).toEqual(['k0']), {
      timeout: 1000,
      interval: 10,
    });
  });
});

describe('RedisOverrides reads what changed', () => {
  it('reads only the rules changed since the version it holds, and the limiter applies just those', async () => {
    const { a, b, change, rule } = await twoGateways();
    for (const p of ['tenant:k1', 'tenant:k2', 'tenant:k3']) {
      const r = rule({ pattern: p, unlimited: true, reason: 'x' });
      await a.overrides.set(r, change(r.id));
    }
    await b.overrides.refresh();
    const held = b.overrides.snapshot().version;
    const block = rule({ pattern: 'tenant:t', block: 403, reason: 'x' });
    await a.overrides.set(block, change(block.id));
    await a.overrides.remove('tenant:k1', change('tenant:k1', 'remove'));
    await b.overrides.refresh();
    const s = b.overrides.snapshot();
    expect(s.changesSince?.(held)?.map((d) => [d.id, d.rule?.effect])).toEqual([
      ['tenant:t', 'block'],
      ['tenant:k1', undefined],
    ]);
    expect(s.rules.map((r) => r.id).sort()).toEqual(['tenant:k2', 'tenant:k3', 'tenant:t']);
    expect((await b.http.evaluate(req)).status).toBe(403);
  });

  it('reads every rule of a Redis that started again empty, even at the version it held', async () => {
    const { a, b, change, rule } = await twoGateways();
    for (const p of ['tenant:k1', 'tenant:k2']) {
      const r = rule({ pattern: p, unlimited: true, reason: 'x' });
      await a.overrides.set(r, change(r.id));
    }
    await b.overrides.refresh();
    expect(b.overrides.snapshot().version).toBe(2);
    // The keys of this prefix gone (a Redis that came back empty), then two other writes: version 2 again.
    const prefix = `o${prefixes}:{overrides}:`;
    const redis = clients[clients.length - 1];
    await redis.del(...['version', 'rules', 'history', 'changes', 'epoch'].map((k) => `${prefix}${k}`));
    for (const p of ['tenant:n1', 'tenant:n2']) {
      const r = rule({ pattern: p, unlimited: true, reason: 'x' });
      await a.overrides.set(r, change(r.id));
    }
    await b.overrides.refresh();
    expect(b.overrides.snapshot().version).toBe(2);
    expect(
      b.overrides
        .snapshot()
        .rules.map((r) => r.id)
        .sort(),
    ).toEqual(['tenant:n1', 'tenant:n2']);
  });
});
