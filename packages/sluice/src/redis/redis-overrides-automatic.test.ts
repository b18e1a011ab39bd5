import { once } from 'node:events';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import {
  freePort,
  REDIS_HOST,
  type RedisServer,
  startRedisServer,
} from '../../../../test/support/redis-server.js';
import {
  AUTOMATIC_HISTORY_LIMIT,
  type OverrideChange,
  type OverrideInput,
  type OverrideRule,
  parseOverride,
} from '../core/index.js';
import { RedisOverrides } from './index.js';

let server: RedisServer;
const clients: Redis[] = [];
const opened: RedisOverrides[] = [];
let prefixes = 0;
const NOW = Date.now();

async function client(port = server.port, ready = true): Promise<Redis> {
  const r = new Redis(port, REDIS_HOST, {
    enableOfflineQueue: false,
    maxRetriesPerRequest: 0,
    retryStrategy: () => 50,
  });
  r.on('error', () => undefined);
  if (ready) await once(r, 'ready');
  clients.push(r);
  return r;
}

function overrides(redis: Redis, prefix: string): RedisOverrides {
  const o = new RedisOverrides({ client: redis, prefix, wallClock: () => NOW });
  opened.push(o);
  return o;
}

const change = (rule: OverrideRule): OverrideChange => ({
  action: 'set',
  id: rule.id,
  rule,
  who: rule.author,
  at: rule.createdAt,
  reason: rule.reason,
});
const operator = (input: OverrideInput) => parseOverride(input, NOW, 'alice');
const penalty = (input: OverrideInput) => parseOverride(input, NOW, 'penalty');

beforeAll(async () => {
  server = await startRedisServer();
});

afterAll(async () => {
  for (const o of opened) o.close();
  for (const c of clients) c.disconnect();
  await server?.stop();
});

describe('automatic rules in Redis', () => {
  it("leaves another gateway's operator rule in place even before this gateway has read it", async () => {
    const prefix = `auto${++prefixes}:`;
    const a = overrides(await client(), prefix);
    const b = overrides(await client(), prefix);
    await Promise.all([a.refresh(), b.refresh()]);
    const block = operator({ pattern: 'ip:192.0.2.7', block: 403, ttlSeconds: 600, reason: 'abuse' });
    await a.set(block, change(block));
    // Gateway b has not refreshed: the test in the same script as the write keeps the operator's block.
    expect(b.snapshot().rules).toEqual([]);
    const short = penalty({ pattern: 'ip:192.0.2.7', block: 429, ttlSeconds: 20, reason: 'limited' });
    expect(await b.set(short, change(short), { automatic: true })).toBe(false);
    await b.refresh();
    expect(b.snapshot().rules).toEqual([block]);
    const limit = operator({ pattern: 'tenant:acme', quota: 600, window: 60, reason: 'deal' });
    await a.set(limit, change(limit));
    const onTenant = penalty({ pattern: 'tenant:acme', block: 429, ttlSeconds: 20, reason: 'limited' });
    expect(await b.set(onTenant, change(onTenant), { automatic: true })).toBe(false);
    // A key of its own, or its own rule again, is written.
    const own = penalty({ pattern: 'ip:192.0.2.8', block: 429, ttlSeconds: 20, reason: 'limited' });
    expect(await b.set(own, change(own), { automatic: true })).toBe(true);
    const twice = penalty({ pattern: 'ip:192.0.2.8', block: 429, ttlSeconds: 40, reason: 'again' });
    expect(await a.set(twice, change(twice), { automatic: true })).toBe(true);
    await a.refresh();
    expect(new Set(a.snapshot().rules)).toEqual(new Set([block, limit, twice]));
  });

  it('keeps the operators history apart: automatic changes never push an operator change out', async () => {
    const prefix = `auto${++prefixes}:`;
    const o = overrides(await client(), prefix);
    const kept = operator({ pattern: 'tenant:acme', block: 403, reason: 'kept' });
    await o.set(kept, change(kept));
    for (let i = 0; i < AUTOMATIC_HISTORY_LIMIT + 100; i++) {
      const p = parseOverride(
        { pattern: `ip:198.51.100.${i % 8}`, block: 429, ttlSeconds: 20, reason: `limited ${i}` },
        NOW + i,
        'penalty',
      );
      await o.set(p, change(p), { automatic: true });
    }
    const history = await o.history();
    expect(history[0]).toMatchObject({ who: 'alice', reason: 'kept' });
    expect(history).toHaveLength(1 + AUTOMATIC_HISTORY_LIMIT);
    expect(history.at(-1)).toMatchObject({
      who: 'penalty',
      reason: `limited ${AUTOMATIC_HISTORY_LIMIT + 99}`,
    });
  });

  it('says the rules are unknown until Redis answered once, and known from then on', async () => {
    const port = await freePort();
    const o = overrides(await client(port, false), `auto${++prefixes}:`);
    await o.refresh();
    expect(o.loaded).toBe(false);
    const late = await startRedisServer({ port });
    try {
      await vi.waitFor(
        async () => {
          await o.refresh();
          expect(o.loaded).toBe(true);
        },
        { timeout: 5000, interval: 50 },
      );
    } finally {
      o.close();
      await late.stop();
    }
    // Redis gone again: the rules read stay known (and applied), as before.
    await o.refresh();
    expect(o.loaded).toBe(true);
  });

  it('reads the rules as soon as its connection opens, not at its next periodic read', async () => {
    const port = await freePort();
    const redis = await client(port, false);
    // Reads every second: the first one, made before the connection opened, failed.
    const o = new RedisOverrides({ client: redis, prefix: `auto${++prefixes}:`, refreshMs: 1000 });
    opened.push(o);
    // Not events.once: the refused attempts before the server starts emit 'error', which would reject it.
    const connected = new Promise((resolve) => redis.once('ready', resolve));
    const late = await startRedisServer({ port });
    try {
      await connected;
      // Answers come in order on one connection: once this one is in, so is a read sent when it opened.
      await redis.ping();
      expect(o.loaded).toBe(true);
    } finally {
      o.close();
      await late.stop();
    }
  });
});
