import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { spawnHammers } from '../../../../test/support/hammer-processes.js';
import { readBucket } from '../../../../test/support/redis-bucket.js';
import { type RedisServer, startRedisServer } from '../../../../test/support/redis-server.js';
import { definePolicy } from '../core/index.js';
import { RedisStore } from './index.js';

// 10 tokens per second, burst 10: slow enough that a few ms of process jitter are a fraction of a token.
const QUOTA = 10;
const WINDOW = 1;
const BURST = 10;
const policy = definePolicy({ name: 'rl.accuracy', quota: QUOTA, window: WINDOW, burst: BURST });

let server: RedisServer;
let redis: Redis;
beforeAll(async () => {
  server = await startRedisServer();
  redis = new Redis({ host: server.host, port: server.port });
});
afterAll(async () => {
  await redis?.quit();
  await server?.stop();
});

describe('RedisStore accuracy across processes', () => {
  it('four Node processes hammering one key admit burst + rate x elapsed, never more, at most one less', async () => {
    const key = `hammer-${Date.now()}`;
    const hammers = spawnHammers(4, [
      String(server.port),
      key,
      '1500',
      '4',
      String(QUOTA),
      String(WINDOW),
      String(BURST),
    ]);
    try {
      for (const h of hammers) expect(await h.next()).toBe('ready');
      // The test takes the first token itself, so the bucket's creation time is known exactly from Redis.
      const store = new RedisStore({ client: redis, timeoutMs: 5_000 });
      expect((await store.decide([{ policy, key }], 1)).allowed).toBe(true);
      const first = (await readBucket(redis, store.keyOf(policy, key), policy))!.last;
      for (const h of hammers) h.go();
      const results = [];
      for (const h of hammers) results.push(JSON.parse(await h.next()));
      const { units, last } = (await readBucket(redis, store.keyOf(policy, key), policy))!;

      const admitted = 1 + results.reduce((sum, r) => sum + r.admitted, 0);
      const elapsedMs = last - first;
      const entitled = BURST + (QUOTA / WINDOW) * (elapsedMs / 1000);
      expect(results.every((r) => r.failures === 0 && r.decisions > r.admitted)).toBe(true);
      expect(elapsedMs).toBeGreaterThan(1_000);
      expect(admitted).toBeLessThanOrEqual(entitled);
      expect(admitted).toBeGreaterThan(entitled - 1);
      // The server's own account agrees: what was entitled minus what was admitted is what the bucket holds.
      expect(units / (WINDOW * 1000)).toBeCloseTo(entitled - admitted, 6);
    } finally {
      for (const h of hammers) h.kill();
    }
  }, 30_000);
});
