/**
 * Concurrency slots on the Redis store across a reload that changes a policy's limit: the slots in flight stay
 * counted under the new limit, and the requests admitted before it give theirs back to the same count. Real
 * redis-server.
 */
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type RedisServer, startRedisServer } from '../../../../test/support/redis-server.js';
import { type Check, definePolicy, ManualClock, type Policy } from '../core/index.js';
import { RedisStore } from './index.js';

let server: RedisServer;
let redis: Redis;

beforeAll(async () => {
  server = await startRedisServer();
  redis = new Redis({ host: server.host, port: server.port });
});

afterAll(async () => {
  await Promise.allSettled([redis?.quit()]);
  await server?.stop();
});

const slotsOf = (n: number): Policy => definePolicy({ name: 'reports', concurrent: n, retryAfter: 2 });
const on = (p: Policy): Check[] => [{ policy: p, key: 'reload' }];

describe('RedisStore: a reload that changes a concurrency limit', () => {
  it('keeps the requests in flight counted: the new limit applies to them', async () => {
    const store = new RedisStore({
      client: redis,
      clock: new ManualClock(1_700_000_000_000),
      timeoutMs: 10_000,
    });
    const before = slotsOf(2);
    expect((await store.decide(on(before), 1)).allowed).toBe(true);
    expect((await store.decide(on(before), 1)).allowed).toBe(true);
    const after = slotsOf(3);
    expect((await store.decide(on(after), 1)).allowed).toBe(true);
    expect((await store.decide(on(after), 1)).allowed).toBe(false);
    // The requests admitted before the reload give their slots back to the same count.
    await store.refund(on(before), 1);
    await store.refund(on(before), 1);
    expect((await store.peek(on(after), 1)).outcomes[0].remaining).toBe(2);
    await store.close?.();
  });
});
