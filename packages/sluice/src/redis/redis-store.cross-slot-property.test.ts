/**
 * Property of the Redis store's cross-slot calls (one script per slot, a denial giving back what the other slots
 * took) under concurrency on a real local Redis Cluster: concurrent calls of mixed shapes and costs over three keys
 * in three slots, then a drain one token at a time, admit exactly each key's burst (the clock is a ManualClock, so
 * nothing refills), as the memory store does on the same sequence: no token leaked by a give-back, none refunded twice.
 */
import { Cluster } from 'ioredis';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { type RedisCluster, startRedisCluster } from '../../../../test/support/redis-server.js';
import { type Check, definePolicy, ManualClock } from '../core/index.js';
import { MemoryStore } from '../memory/index.js';
import { clusterSlot, RedisStore } from './index.js';

const START = 1_700_000_000_000;
const pa = definePolicy({ name: 'pa', quota: 600, window: 60, burst: 7 });
const pb = definePolicy({ name: 'pb', quota: 600, window: 60, burst: 4 });
const pc = definePolicy({ name: 'pc', quota: 600, window: 60, burst: 5 });
let cluster: RedisCluster;
let clustered: Cluster;
beforeAll(async () => {
  cluster = await startRedisCluster();
  clustered = new Cluster([...cluster.startupNodes]);
}, 60_000);
afterAll(async () => {
  await Promise.allSettled([clustered?.quit()]);
  await cluster?.stop();
});

let seed = 12345;
const rnd = () => {
  seed = (seed * 1103515245 + 12345) % 2147483648;
  return seed / 2147483648;
};

async function run(
  store: { decide(c: Check[], cost: number): { allowed: boolean } | Promise<{ allowed: boolean }> },
  tag: string,
) {
  const ks = { a: `${tag}-a`, b: `${tag}-b`, c: `${tag}-c` };
  const ca: Check = { policy: pa, key: ks.a };
  const cb: Check = { policy: pb, key: ks.b };
  const cc: Check = { policy: pc, key: ks.c };
  const shapes: Check[][] = [[ca, cb], [ca], [cb], [ca, cc], [cb, cc], [ca, cb, cc], [cc]];
  const used = new Map<string, number>([
    ['pa', 0],
    ['pb', 0],
    ['pc', 0],
  ]);
  const reqs: Promise<void>[] = [];
  for (let i = 0; i < 120; i++) {
    const shape = shapes[Math.floor(rnd() * shapes.length)] as Check[];
    const cost = rnd() < 0.3 ? 2 : 1;
    reqs.push(
      Promise.resolve(store.decide(shape, cost)).then((d) => {
        if (d.allowed) for (const c of shape) used.set(c.policy.name, (used.get(c.policy.name) ?? 0) + cost);
      }),
    );
  }
  await Promise.all(reqs);
  // Drain what is left one token at a time.
  for (const c of [ca, cb, cc])
    while ((await store.decide([c], 1)).allowed) used.set(c.policy.name, (used.get(c.policy.name) ?? 0) + 1);
  return Object.fromEntries(used);
}

it('cross-slot calls under concurrency: every key gives exactly its burst, as the memory store does', async () => {
  const redis = new RedisStore({ client: clustered, clock: new ManualClock(START), timeoutMs: 10_000 });
  for (let round = 0; round < 15; round++) {
    let tag = `r${round}`;
    for (let j = 0; ; j++) {
      const t = `r${round}x${j}`;
      const s = new Set([pa, pb, pc].map((p, i) => clusterSlot(redis.keyOf(p, `${t}-${'abc'[i]}`))));
      if (s.size === 3) {
        tag = t;
        break;
      }
    }
    const mem = new MemoryStore({ clock: new ManualClock(START) });
    const got = await run(redis, tag);
    const want = await run(mem, tag);
    expect({ round, ...got }).toEqual({ round, pa: 7, pb: 4, pc: 5 });
    expect({ round, ...want }).toEqual({ round, pa: 7, pb: 4, pc: 5 });
  }
}, 120_000);
