/**
 * Redis memory per bucket, for sizing a Redis for a fleet (docs/production.md): one throwaway `redis-server`,
 * `used_memory` read before and after one decision for each of N keys under one policy (one bucket per key, the
 * gateway's Redis key layout), then the difference divided by the buckets Redis holds. A memory figure does not
 * move with the machine's load, unlike a rate.
 *
 * Run: npx tsx bench/redis-memory.bench.ts [keys=100000] [rounds=3]
 */
import { Redis } from 'ioredis';
import { definePolicy } from '../packages/sluice/src/core/index.js';
import { RedisStore } from '../packages/sluice/src/redis/index.js';
import { startRedisServer } from '../test/support/redis-server.js';

const KEYS = Number(process.argv[2] ?? 100_000);
const ROUNDS = Number(process.argv[3] ?? 3);
const IN_FLIGHT = 256;
// A tier's hour bucket as the gateway defines it. A bucket lives until it would be full again, so each key takes
// half of it: every bucket is still held when memory is read (one token would expire it within 0.4 s).
const policy = definePolicy({ name: 'standard.hour', quota: 10_000, window: 3600, burst: 10_000 });
const COST = 5_000;

/** `used_memory` of the server, in bytes. */
async function usedMemory(client: Redis): Promise<number> {
  const info = await client.info('memory');
  return Number(/^used_memory:(\d+)/m.exec(info)?.[1]);
}

const rows: string[] = [];
for (let round = 1; round <= ROUNDS; round++) {
  const server = await startRedisServer();
  const client = new Redis(server.port, '127.0.0.1');
  try {
    const store = new RedisStore({ client, prefix: 'rl:', timeoutMs: 60_000, failureMode: 'closed' });
    // Load the script and the client's buffers before the first reading.
    await store.decide([{ policy, key: 'warm-up' }], 1);
    await client.del(...(await client.keys('rl:*')));
    const before = await usedMemory(client);
    for (let i = 0; i < KEYS; i += IN_FLIGHT) {
      const batch: Promise<unknown>[] = [];
      for (let j = i; j < Math.min(KEYS, i + IN_FLIGHT); j++) {
        batch.push(store.decide([{ policy, key: `ip:203.0.${j >> 8}.${j & 255}` }], COST));
      }
      await Promise.all(batch);
    }
    const after = await usedMemory(client);
    const buckets = await client.dbsize();
    rows.push(`| ${round} | ${buckets} | ${((after - before) / buckets).toFixed(1)} |`);
    store.close();
  } finally {
    client.disconnect();
    await server.stop();
  }
}
console.log(`Redis used_memory per bucket, ${KEYS} keys, one policy (median of the rounds is the figure):\n`);
console.log('| round | buckets | bytes per bucket |\n| --- | --- | --- |');
console.log(rows.join('\n'));
