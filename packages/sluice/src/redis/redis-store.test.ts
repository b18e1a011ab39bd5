import { createHash } from 'node:crypto';
import fc from 'fast-check';
import { Cluster, Redis } from 'ioredis';
import { createClient, createCluster } from 'redis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readBucket } from '../../../../test/support/redis-bucket.js';
import {
  type RedisCluster,
  type RedisServer,
  redisCli,
  startRedisCluster,
  startRedisSentinel,
  startRedisServer,
} from '../../../../test/support/redis-server.js';
import { type Check, definePolicy, ManualClock } from '../core/index.js';
import { policyVersion } from '../core/policy-fingerprint.js';
import { ReferenceStore } from '../testing/index.js';
import {
  clusterSlot,
  type FailoverEvent,
  ioredisClient,
  nodeRedisClient,
  type RecoverEvent,
  RedisStore,
  type RedisStoreOptions,
  SCRIPT,
  SCRIPT_SHA,
  toScriptClient,
} from './index.js';

const START = 1_700_000_000_000;
const write = definePolicy({ name: 'rl.write', quota: 120, window: 60, burst: 30 });
const hour = definePolicy({ name: 'rl.hour', quota: 1000, window: 3600, burst: 1000 });
let n = 0;
const fresh = (label: string) => `${label}-${n++}`;

let server: RedisServer;
let cluster: RedisCluster;
let redis: Redis;
let clustered: Cluster;

/** Waits (real time) until `check` holds; for state reached through real I/O (reconnects, probes). */
async function eventually(
  check: () => boolean | Promise<boolean>,
  what: string,
  timeoutMs = 5_000,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

async function evalshaCalls(port: number): Promise<number> {
  const text = await redisCli(port, 'INFO', 'commandstats');
  const m = /cmdstat_evalsha:calls=(\d+)/.exec(text);
  return m ? Number(m[1]) : 0;
}

beforeAll(async () => {
  [server, cluster] = await Promise.all([startRedisServer(), startRedisCluster()]);
  redis = new Redis({ host: server.host, port: server.port });
  clustered = new Cluster([...cluster.startupNodes]);
});

afterAll(async () => {
  await Promise.allSettled([redis?.quit(), clustered?.quit()]);
  await Promise.allSettled([server?.stop(), cluster?.stop()]);
});

function store(extra: Partial<RedisStoreOptions> = {}, clock = new ManualClock(START)) {
  // A generous timeout unless a test sets its own: a busy machine must not turn answers into fallbacks.
  return { clock, store: new RedisStore({ client: redis, clock, timeoutMs: 10_000, ...extra }) };
}

describe('RedisStore: keys and expiry', () => {
  it('stores "<units>:<last>" under <prefix><policy>:<version>:{<key>} with PX at the time to full', async () => {
    const { store: s } = store({ prefix: 'acme:rl:' });
    const key = fresh('user');
    await s.decide([{ policy: write, key }], 1);
    const name = `acme:rl:rl.write:${policyVersion(write)}:{${key}}`;
    expect(s.keyOf(write, key)).toBe(name);
    // 29 tokens left of 30: 60,000 units short, refilled at 120 units per ms: 500 ms, plus one minute of slack
    // because the clock is injected.
    expect(await redis.get(name)).toBe(`${29 * 60_000}:${START}`);
    const ttl = await redis.pttl(name);
    expect(ttl).toBeGreaterThan(60_000);
    expect(ttl).toBeLessThanOrEqual(60_500);
  });

  it('uses the server clock by default and expires a bucket exactly at its time to full', async () => {
    const s = new RedisStore({ client: redis, timeoutMs: 10_000 });
    const key = fresh('server-time');
    const slow = definePolicy({ name: 'rl.slow', quota: 1, window: 3600, burst: 5 });
    const d = await s.decide([{ policy: slow, key }], 1);
    expect(d.outcomes[0]).toMatchObject({ remaining: 4, resetSeconds: 3600 });
    // Stored as the units short of full, expiring at the bucket's time plus its time to full.
    expect(await redis.get(s.keyOf(slow, key))).toBe(String(3_600_000));
    const { units, last } = (await readBucket(redis, s.keyOf(slow, key), slow))!;
    expect(units).toBe(4 * 3_600_000);
    const [sec] = await redis.time();
    expect(Math.abs(last - Number(sec) * 1000)).toBeLessThan(5_000);
    // One token at 1 per hour is 3,600,000 ms of refill, and no slack without an injected clock.
    const ttl = await redis.pttl(s.keyOf(slow, key));
    expect(ttl).toBeLessThanOrEqual(3_600_000);
    expect(ttl).toBeGreaterThan(3_590_000);
  });

  it('deletes a bucket that is full again instead of storing it', async () => {
    const { store: s } = store();
    const key = fresh('refund');
    await s.decide([{ policy: write, key }], 3);
    expect(await redis.exists(s.keyOf(write, key))).toBe(1);
    await s.refund([{ policy: write, key }], 3);
    expect(await redis.exists(s.keyOf(write, key))).toBe(0);
    await s.decide([{ policy: write, key }], 3);
    await s.reset([{ policy: write, key }]);
    expect(await redis.exists(s.keyOf(write, key))).toBe(0);
  });

  it('lays keys out with a hash tag function and rejects braces where they would be ambiguous', async () => {
    const { store: s } = store({ hashTag: (k) => k.split(':')[0] });
    expect(s.keyOf(write, 'tenant7:user:1')).toBe(
      `rl:rl.write:${policyVersion(write)}:{tenant7}:tenant7:user:1`,
    );
    const braced = definePolicy({ name: 'rl.{x}', quota: 1, window: 1 });
    await expect(s.decide([{ policy: braced, key: 'k' }], 1)).rejects.toMatchObject({
      code: 'ERR_INVALID_OPTION',
    });
    const bad = new RedisStore({ client: redis, hashTag: () => '' });
    await expect(bad.decide([{ policy: write, key: 'k' }], 1)).rejects.toMatchObject({
      code: 'ERR_INVALID_OPTION',
    });
    expect(() => new RedisStore({ client: redis, prefix: 'a{b' })).toThrow(/prefix must be a string without/);
  });

  it('files buckets by policy definition: a changed limit under the same name starts full, as on the memory store', async () => {
    const { store: s } = store();
    const key = fresh('changed');
    const five = definePolicy({ name: 'rl.seal', quota: 5, window: 3600 });
    for (let i = 0; i < 5; i++) await s.decide([{ policy: five, key }], 1);
    expect((await s.decide([{ policy: five, key }], 1)).reason).toBe('limited');
    // The same definition in a new object (a reload that kept the limits) keeps the bucket and its denial.
    const same = definePolicy({ name: 'rl.seal', quota: 5, window: 3600 });
    expect(s.keyOf(same, key)).toBe(s.keyOf(five, key));
    expect((await s.decide([{ policy: same, key }], 1)).reason).toBe('limited');
    // 5 to 8 per hour, or only the shadow flag: a bucket of its own, full.
    const eight = definePolicy({ name: 'rl.seal', quota: 8, window: 3600 });
    const outcomes = [];
    for (let i = 0; i < 9; i++) outcomes.push((await s.decide([{ policy: eight, key }], 1)).reason);
    expect(outcomes).toEqual([...Array(8).fill('allowed'), 'limited']);
    const shadow = definePolicy({ name: 'rl.seal', quota: 5, window: 3600, shadow: true });
    expect((await s.decide([{ policy: shadow, key }], 1)).outcomes[0].remaining).toBe(4);
    expect(new Set([five, eight, shadow].map((p) => s.keyOf(p, key))).size).toBe(3);
  });

  it('computes the same Cluster slot as Redis for any key', async () => {
    const port = cluster.nodes[0].port;
    await fc.assert(
      fc.asyncProperty(fc.string({ unit: 'binary', maxLength: 24 }), async (k) => {
        const text = `rl:p:{${k}}`;
        if (text.includes('\0') || text.includes('\n') || text.includes('\r')) return;
        expect(clusterSlot(text)).toBe(Number(await redisCli(port, 'CLUSTER', 'KEYSLOT', text)));
      }),
      { numRuns: 30 },
    );
    expect(clusterSlot('{}x')).toBe(Number(await redisCli(port, 'CLUSTER', 'KEYSLOT', '{}x')));
    expect(clusterSlot('plain')).toBe(Number(await redisCli(port, 'CLUSTER', 'KEYSLOT', 'plain')));
  });
});

describe('RedisStore: exact arithmetic near 2^53', () => {
  it('decides like the reference model for huge windows and bursts', async () => {
    // capacity = burst x window x 1000 close to 2^53: units travel as %.0f strings, never as Lua numbers.
    const big = definePolicy({ name: 'rl.big', quota: 7, window: 31_536_000, burst: 285_000 });
    const queued = definePolicy({
      name: 'rl.q',
      quota: 3,
      window: 86_400,
      burst: 5,
      queue: { limit: 4, maxWaitMs: 90_000_000 },
    });
    // One unit is a millisecond of refill here: a digit lost on the way changes the rounded-up reset seconds.
    const huge = definePolicy({ name: 'rl.huge', quota: 1, window: 1, burst: 9_000_000_000_000 });
    expect(big.capacityUnits).toBeGreaterThan(2 ** 52);
    expect(huge.capacityUnits).toBeGreaterThan(2 ** 52);
    await fc.assert(
      fc.asyncProperty(
        fc.array(
          fc.record({
            // Sub-second remainders, so that lost low digits would show in rounded values.
            advance: fc
              .tuple(fc.integer({ min: 0, max: 50_000_000 }), fc.integer({ min: 1, max: 999 }))
              .map(([s, ms]) => s * 1000 + ms),
            cost: fc.integer({ min: 1, max: 300_000 }),
            kind: fc.constantFrom('decide', 'reserve', 'peek', 'refund'),
            which: fc.subarray([0, 1, 2], { minLength: 1 }),
          }),
          { minLength: 1, maxLength: 15 },
        ),
        async (ops) => {
          const { store: s, clock } = store();
          const oracle = new ReferenceStore(clock);
          const key = fresh('big');
          const all: Check[] = [
            { policy: big, key },
            { policy: queued, key },
            { policy: huge, key },
          ];
          for (const o of ops) {
            clock.advance(o.advance);
            const checks = o.which.map((i) => all[i]);
            const cost = o.kind === 'reserve' ? 1 + (o.cost % 8) : o.cost;
            if (o.kind === 'refund') {
              await s.refund(checks, cost);
              oracle.refund(checks, cost);
              continue;
            }
            const got = await s[o.kind as 'decide'](checks, cost);
            const want = oracle[o.kind as 'decide'](checks, cost);
            expect({ ...got, outcomes: got.outcomes.map((x) => ({ ...x })) }).toEqual({
              ...want,
              outcomes: want.outcomes.map((x) => ({ ...x })),
            });
          }
          s.close();
        },
      ),
      { numRuns: 25 },
    );
  });
});

describe('RedisStore: batching, script cache and deny cache', () => {
  it('decides concurrent calls in shared script calls, exact to the token', async () => {
    const { store: s } = store({ denyCache: false });
    const key = fresh('batch');
    const before = await evalshaCalls(server.port);
    const decisions = await Promise.all(
      Array.from({ length: 100 }, () => s.decide([{ policy: write, key }], 1)),
    );
    expect(decisions.filter((d) => d.allowed)).toHaveLength(30);
    expect(decisions.slice(30).every((d) => d.reason === 'limited')).toBe(true);
    const stats = s.stats();
    expect(stats.scriptCalls).toBeLessThanOrEqual(s.options.batchMaxInFlight);
    expect(stats.batchedScriptCalls).toBeGreaterThan(0);
    expect((await evalshaCalls(server.port)) - before).toBe(stats.scriptCalls);
  });

  it('splits batches at batch.maxEntries', async () => {
    const { store: s } = store({ denyCache: false, batch: { maxEntries: 10, maxInFlight: 2 } });
    const key = fresh('split');
    const decisions = await Promise.all(
      Array.from({ length: 45 }, () => s.decide([{ policy: write, key }], 1)),
    );
    expect(decisions.filter((d) => d.allowed)).toHaveLength(30);
    expect(s.stats().scriptCalls).toBe(5);
  });

  it('decides a batch of mixed calls (ops, costs, policies, repeated keys) like the reference model in order', async () => {
    // Calls of one tick share script calls; the script packs runs of calls of one shape, so mixed shapes,
    // repeated keys and resets between takes must still come out exactly as if decided one by one.
    const queued = definePolicy({
      name: 'rl.queued',
      quota: 2,
      window: 1,
      burst: 3,
      queue: { limit: 2, maxWaitMs: 2_000 },
    });
    const shadow = definePolicy({ name: 'rl.shadow', quota: 1, window: 1, burst: 2, shadow: true });
    const policies = [write, hour, queued, shadow];
    await fc.assert(
      fc.asyncProperty(
        fc.array(
          fc.array(
            fc.record({
              kind: fc.constantFrom('decide', 'decide', 'reserve', 'peek', 'refund', 'reset'),
              cost: fc.integer({ min: 1, max: 4 }),
              key: fc.integer({ min: 0, max: 2 }),
              which: fc.subarray([0, 1, 2, 3], { minLength: 1 }),
            }),
            { minLength: 1, maxLength: 40 },
          ),
          { minLength: 1, maxLength: 4 },
        ),
        fc.integer({ min: 1, max: 70 }),
        async (ticks, maxEntries) => {
          const { store: s, clock } = store({ denyCache: false, batch: { maxEntries, maxInFlight: 3 } });
          const oracle = new ReferenceStore(clock);
          const keys = [fresh('mix'), fresh('mix'), fresh('mix')];
          for (const calls of ticks) {
            clock.advance(700);
            const want: unknown[] = [];
            const got = await Promise.all(
              calls.map((c) => {
                const checks = c.which.map((i) => ({ policy: policies[i], key: keys[c.key] }));
                if (c.kind === 'reset') {
                  want.push(undefined);
                  oracle.reset(checks);
                  return s.reset(checks);
                }
                if (c.kind === 'refund') {
                  want.push(undefined);
                  oracle.refund(checks, c.cost);
                  return s.refund(checks, c.cost);
                }
                const kind = c.kind as 'decide';
                want.push(oracle[kind](checks, c.cost));
                return s[kind](checks, c.cost);
              }),
            );
            const plain = (d: unknown) =>
              d === undefined
                ? d
                : {
                    ...(d as object),
                    outcomes: (d as { outcomes: object[] }).outcomes.map((x) => ({ ...x })),
                  };
            expect(got.map(plain)).toEqual(want.map(plain));
          }
          expect(s.stats().fallbackDecisions).toBe(0);
          s.close();
        },
      ),
      { numRuns: 25 },
    );
  });

  it('answers a call without checks from Redis, like the memory store (no MGET of nothing)', async () => {
    const { store: s } = store({ denyCache: false });
    expect(await s.decide([], 1)).toMatchObject({ allowed: true, reason: 'allowed', outcomes: [] });
    await s.refund([], 1);
    await s.reset([]);
    expect(s.stats()).toMatchObject({ redisDecisions: 1, fallbackDecisions: 0, errors: 0 });
  });

  it('reads more than 1,000 buckets of one script call in parts', async () => {
    const { store: s } = store({ denyCache: false, batch: { maxEntries: 1_500, maxInFlight: 1 } });
    const keys = Array.from({ length: 1_200 }, () => fresh('wide'));
    // Twice each key in one tick: the second call must see the first one's token gone.
    const decisions = await Promise.all(
      [...keys, ...keys].map((key) => s.decide([{ policy: write, key }], 10)),
    );
    expect(s.stats().scriptCalls).toBe(2);
    expect(decisions.slice(0, 1_200).every((d) => d.outcomes[0].remaining === 20)).toBe(true);
    expect(decisions.slice(1_200).every((d) => d.outcomes[0].remaining === 10)).toBe(true);
    expect(await redis.get(s.keyOf(write, keys[1_199]))).toBe(`${10 * 60_000}:${START}`);
  });

  it('keeps a stepped bucket on its step with the server clock: its time is its expiry less whole steps', async () => {
    const s = new RedisStore({ client: redis, timeoutMs: 10_000 });
    const key = fresh('server-stepped');
    // 5 tokens every 60 s, burst 5: no step boundary passes while this test runs.
    const stepped = definePolicy({ name: 'rl.stepped', refill: { tokens: 5, every: 60 } });
    expect((await s.decide([{ policy: stepped, key }], 3)).outcomes[0].remaining).toBe(2);
    const first = (await readBucket(redis, s.keyOf(stepped, key), stepped))!;
    expect(first.raw).toBe(String(3 * stepped.unitsPerToken));
    // Three tokens short: the next step (60 s after the bucket's time) fills it.
    expect(first.expiresAt - first.last).toBe(60_000);
    // A second call reads the bucket's time back from its expiry: the same step, so no refill yet.
    expect((await s.decide([{ policy: stepped, key }], 1)).outcomes[0].remaining).toBe(1);
    const second = (await readBucket(redis, s.keyOf(stepped, key), stepped))!;
    expect(second.raw).toBe(String(4 * stepped.unitsPerToken));
    expect(second.last).toBe(first.last);
    expect(second.expiresAt).toBe(first.expiresAt);
  });

  it('writes nothing for a call that takes nothing: the stored value and its expiry stay', async () => {
    const { store: s, clock } = store({ denyCache: false });
    const key = fresh('still');
    const name = s.keyOf(write, key);
    await s.decide([{ policy: write, key }], 30);
    const stored = await redis.get(name);
    const ttl = await redis.pttl(name);
    clock.advance(500);
    // A denial and a peek leave the bucket as it was: it refills from the stored value to the same level.
    expect((await s.decide([{ policy: write, key }], 2)).allowed).toBe(false);
    expect((await s.peek([{ policy: write, key }], 1)).allowed).toBe(true);
    expect(await redis.get(name)).toBe(stored);
    expect(await redis.pttl(name)).toBeLessThanOrEqual(ttl);
    // 500 ms refilled 60,000 units (one token at 120 units per ms): taking it leaves 0 units at the new time.
    expect((await s.decide([{ policy: write, key }], 1)).outcomes[0].remaining).toBe(0);
    expect(await redis.get(name)).toBe(`0:${START + 500}`);
  });

  it('names the script by its real SHA-1, the one Redis computes', async () => {
    expect(createHash('sha1').update(SCRIPT).digest('hex')).toBe(SCRIPT_SHA);
    expect(await redis.script('LOAD', SCRIPT)).toBe(SCRIPT_SHA);
  });

  it('recovers from NOSCRIPT after SCRIPT FLUSH by running the script with EVAL', async () => {
    const { store: s } = store();
    const key = fresh('flush');
    await s.decide([{ policy: write, key }], 1);
    await redis.script('FLUSH');
    expect(await redis.script('EXISTS', SCRIPT_SHA)).toEqual([0]);
    const d = await s.decide([{ policy: write, key }], 1);
    expect(d.outcomes[0].remaining).toBe(28);
    expect(s.stats()).toMatchObject({ scriptReloads: 1, errors: 0, fallbackDecisions: 0 });
    expect(await redis.script('EXISTS', SCRIPT_SHA)).toEqual([1]);
  });

  it('denies a just-denied key locally until its retry time, with the headers Redis gave', async () => {
    const { store: s, clock } = store();
    const key = fresh('deny');
    const c = [{ policy: write, key }];
    await s.decide(c, 30);
    const first = await s.decide(c, 1);
    expect(first).toMatchObject({ allowed: false, retryAfterSeconds: 1 });
    const calls = s.stats().scriptCalls;
    clock.advance(300);
    const cached = await s.decide(c, 1);
    expect(s.stats()).toMatchObject({ scriptCalls: calls, denyCacheHits: 1, denyCacheSize: 1 });
    const redisView = await new RedisStore({
      client: redis,
      clock,
      denyCache: false,
      timeoutMs: 10_000,
    }).peek(c, 1);
    expect(cached).toEqual(redisView);
    clock.advance(200); // 500 ms: one token refilled, the cache must let Redis decide
    expect((await s.decide(c, 1)).allowed).toBe(true);
    expect(s.stats().scriptCalls).toBe(calls + 1);
  });

  it('keeps remembered buckets up to date with what this node took since the denial', async () => {
    const { store: s } = store();
    const odd = definePolicy({ name: 'rl.odd', quota: 7, window: 60, burst: 3 });
    const read = definePolicy({ name: 'rl.read', quota: 600, window: 60, burst: 100 });
    const key = fresh('refresh');
    const both: Check[] = [
      { policy: odd, key },
      { policy: read, key },
    ];
    await s.decide(both, 3);
    expect((await s.decide(both, 1)).allowed).toBe(false); // remembered: odd 0, read 97
    expect((await s.decide([{ policy: read, key }], 40)).allowed).toBe(true); // Redis: read 57
    const local = await s.decide(both, 1);
    expect(s.stats().denyCacheHits).toBe(1);
    expect(local.outcomes.map((o) => o.remaining)).toEqual([0, 57]);
  });

  it('does not answer from a remembered denial after a call took tokens while a refund started', async () => {
    // Found by the interleaving property (store-concurrency.test.ts): the decision rode in one script call with a
    // refund of another key, so it could not refresh the remembered bucket, which kept its older, higher level.
    const { store: s } = store();
    const odd = definePolicy({ name: 'rl.odd', quota: 7, window: 60, burst: 3 });
    const b = [{ policy: odd, key: fresh('stale-b') }];
    await s.decide(b, 1); // 2 left
    expect(await s.decide(b, 3)).toMatchObject({ allowed: false }); // remembered: 2 left
    const [taken] = await Promise.all([
      s.decide(b, 1),
      s.refund([{ policy: odd, key: fresh('stale-a') }], 1),
    ]);
    expect(taken.outcomes[0].remaining).toBe(1);
    const again = await s.decide(b, 3);
    expect(again).toMatchObject({ allowed: false, retryAfterSeconds: 18 });
    expect(again.outcomes[0].remaining).toBe(1);
  });

  it('forget drops a remembered denial after another store on the same Redis reset the key (another thread)', async () => {
    const { store: first, clock } = store();
    const other = new RedisStore({ client: redis, clock, timeoutMs: 10_000 });
    const key = fresh('other-thread');
    const c = [{ policy: write, key }];
    await first.decide(c, 30);
    expect((await first.decide(c, 1)).allowed).toBe(false); // remembered here
    await other.reset(c);
    // The reset went through the other store: this one still answers from what it remembers.
    expect((await first.decide(c, 1)).allowed).toBe(false);
    expect(first.stats().denyCacheHits).toBe(1);
    first.forget(c);
    expect(first.stats().denyCacheSize).toBe(0);
    expect((await first.decide(c, 1)).outcomes[0]).toMatchObject({ limited: false, remaining: 29 });
    first.close();
    first.forget(c); // after close: nothing to drop, no error
  });

  it('lets the deny cache hold a bounded number of buckets, oldest out first', async () => {
    const { store: s } = store({ denyCache: { maxEntries: 2 } });
    for (let i = 0; i < 5; i++) {
      const key = fresh('bounded');
      await s.decide([{ policy: write, key }], 30);
      await s.decide([{ policy: write, key }], 1);
    }
    expect(s.stats().denyCacheSize).toBe(2);
  });
});

describe('RedisStore: Cluster', () => {
  it('decides checks that span slots with one script per slot, and with one under a shared hash tag', async () => {
    const plain = new RedisStore({ client: clustered, clock: new ManualClock(START), timeoutMs: 10_000 });
    const mixed: Check[] = [
      { policy: write, key: 'tenant1:user:1' },
      { policy: hour, key: 'tenant1' },
    ];
    const calls = plain.stats().scriptCalls;
    const split = await plain.decide(mixed, 1);
    expect(split.outcomes.map((o) => o.remaining)).toEqual([29, 999]);
    expect(plain.stats().scriptCalls - calls).toBe(2);
    const tagged = new RedisStore({
      client: clustered,
      clock: new ManualClock(START),
      timeoutMs: 10_000,
      hashTag: (k) => k.split(':')[0],
    });
    const d = await tagged.decide(mixed, 1);
    expect(d.outcomes.map((o) => o.remaining)).toEqual([29, 999]);
    expect(tagged.stats().scriptCalls).toBe(1);
  });

  it('groups concurrent calls by slot', async () => {
    const s = new RedisStore({
      client: clustered,
      clock: new ManualClock(START),
      denyCache: false,
      timeoutMs: 10_000,
    });
    const keys = Array.from({ length: 12 }, () => fresh('slots'));
    const slots = new Set(keys.map((k) => clusterSlot(s.keyOf(write, k))));
    const decisions = await Promise.all(keys.map((key) => s.decide([{ policy: write, key }], 1)));
    expect(decisions.every((d) => d.allowed && d.outcomes[0].remaining === 29)).toBe(true);
    expect(s.stats().scriptCalls).toBe(slots.size);
  });

  it('works through ioredis with Sentinel', async () => {
    const sentinel = await startRedisSentinel(server.port);
    const client = new Redis({
      sentinels: [{ host: sentinel.host, port: sentinel.port }],
      name: sentinel.masterName,
    });
    try {
      const s = new RedisStore({ client, clock: new ManualClock(START), timeoutMs: 10_000 });
      const key = fresh('sentinel');
      await s.decide([{ policy: write, key }], 4);
      // The bucket is on the master Sentinel named: the server this suite started.
      expect(await redis.get(s.keyOf(write, key))).toBe(`${26 * 60_000}:${START}`);
    } finally {
      client.disconnect();
      await sentinel.stop();
    }
  });

  it('works through node-redis clients, single node and cluster', async () => {
    const one = createClient({ url: server.url });
    const many = createCluster({ rootNodes: [{ url: `redis://127.0.0.1:${cluster.nodes[0].port}` }] });
    await Promise.all([one.connect(), many.connect()]);
    try {
      for (const client of [one, many]) {
        const s = new RedisStore({ client, clock: new ManualClock(START), timeoutMs: 10_000 });
        const key = fresh('node-redis');
        await s.decide([{ policy: write, key }], 2);
        expect((await s.peek([{ policy: write, key }], 1)).outcomes[0].remaining).toBe(28);
      }
      expect(toScriptClient(many).cluster).toBe(true);
      expect(toScriptClient(one).cluster).toBe(false);
      await redisCli(cluster.nodes[0].port, 'SCRIPT', 'FLUSH');
      await expect(nodeRedisClient(many, { cluster: true }).ping()).resolves.toBe(1);
      await expect(nodeRedisClient(one).ping()).resolves.toBe('PONG');
    } finally {
      await Promise.allSettled([one.quit(), many.quit()]);
    }
  });
});

describe('RedisStore: failure modes, timeout and breaker', () => {
  // A port nothing listens on, and a client that fails fast instead of queueing while disconnected.
  const dead = () => {
    const client = new Redis({ host: '127.0.0.1', port: 1, enableOfflineQueue: false, lazyConnect: true });
    client.on('error', () => {});
    return client;
  };

  it('open: admits and counts while Redis is unreachable', async () => {
    const client = dead();
    const s = new RedisStore({ client, clock: new ManualClock(START), failureMode: 'open' });
    const d = await s.decide([{ policy: write, key: 'k' }], 1);
    expect(d).toMatchObject({ allowed: true, reason: 'store_unavailable_open', retryAfterSeconds: 0 });
    expect(d.outcomes[0]).toMatchObject({ limited: false, remaining: 30 });
    expect(s.stats()).toMatchObject({ fallbackDecisions: 1, errors: 1 });
    await s.refund([{ policy: write, key: 'k' }], 1);
    expect(s.stats().droppedRefunds).toBe(1);
    client.disconnect();
  });

  it('closed: denies with store_unavailable and a Retry-After of the probe interval', async () => {
    const client = dead();
    const s = new RedisStore({
      client,
      clock: new ManualClock(START),
      failureMode: 'closed',
      breaker: { probeIntervalMs: 2500 },
    });
    const d = await s.decide([{ policy: write, key: 'k' }], 1);
    expect(d).toMatchObject({
      allowed: false,
      reason: 'store_unavailable',
      retryAfterSeconds: 3,
      violated: [],
    });
    await expect(s.reset([{ policy: write, key: 'k' }])).rejects.toMatchObject({
      code: 'ERR_STORE_UNAVAILABLE',
    });
    client.disconnect();
  });

  it('local: decides in memory with limits divided by the node count', async () => {
    const client = dead();
    const s = new RedisStore({ client, clock: new ManualClock(START), failureMode: 'local', nodeCount: 3 });
    const queued = definePolicy({
      name: 'rl.qq',
      quota: 60,
      window: 60,
      burst: 6,
      queue: { limit: 3, maxWaitMs: 9 },
    });
    const c: Check[] = [
      { policy: write, key: 'k' },
      { policy: queued, key: 'k' },
    ];
    const results = [];
    for (let i = 0; i < 12; i++) results.push(await s.decide(c, 1));
    expect(results.filter((d) => d.allowed)).toHaveLength(2); // burst 6 / 3 nodes
    expect(results[0].outcomes[0].policy).toBe(write);
    expect(results[0].outcomes[0].remaining).toBe(9); // 30 / 3 - 1
    expect(results[11].violated.map((o) => o.policy)).toEqual([queued]);
    expect((await s.reserve(c, 1)).allowed).toBe(false);
    expect((await s.peek(c, 1)).allowed).toBe(false);
    await s.refund(c, 1);
    expect((await s.decide(c, 1)).allowed).toBe(true);
    await expect(s.reset(c)).rejects.toMatchObject({ code: 'ERR_STORE_UNAVAILABLE' });
    expect((await s.decide(c, 1)).allowed).toBe(true); // the local buckets were reset anyway
    client.disconnect();
  });

  it('times out a call that takes longer than timeoutMs and follows the failure mode', async () => {
    const client = new Redis({ host: server.host, port: server.port });
    const s = new RedisStore({ client, clock: new ManualClock(START), failureMode: 'open', timeoutMs: 20 });
    await redisCli(server.port, 'CLIENT', 'PAUSE', '300', 'ALL');
    const d = await s.decide([{ policy: write, key: fresh('pause') }], 1);
    expect(d.reason).toBe('store_unavailable_open');
    expect(s.stats()).toMatchObject({ timeouts: 1, errors: 1 });
    await client.quit();
  });

  it('never lets a queued call wait longer than timeoutMs for its turn', async () => {
    const client = new Redis({ host: server.host, port: server.port });
    const s = new RedisStore({
      client,
      clock: new ManualClock(START),
      failureMode: 'open',
      timeoutMs: 20,
      batch: { maxEntries: 1, maxInFlight: 1 },
      breaker: { failureThreshold: 100 },
    });
    await redisCli(server.port, 'CLIENT', 'PAUSE', '300', 'ALL');
    // Three calls of one tick: the first is sent, two queue behind it before it leaves.
    const key = fresh('queued');
    const all = await Promise.all([1, 2, 3].map(() => s.decide([{ policy: write, key }], 1)));
    expect(all.map((d) => d.reason)).toEqual(Array(3).fill('store_unavailable_open'));
    expect(s.stats()).toMatchObject({ scriptCalls: 1, timeouts: 3, errors: 1 });
    await client.quit();
  });

  it('switches to the failure mode after failureThreshold failures, probes, and switches back', async () => {
    const own = await startRedisServer();
    const client = new Redis({
      host: own.host,
      port: own.port,
      enableOfflineQueue: false,
      retryStrategy: () => 20,
    });
    client.on('error', () => {});
    const clock = new ManualClock(START);
    const s = new RedisStore({
      client,
      clock,
      failureMode: 'closed',
      timeoutMs: 2_000,
      breaker: { failureThreshold: 2, probeIntervalMs: 1000 },
    });
    const failovers: FailoverEvent[] = [];
    const recoveries: RecoverEvent[] = [];
    s.on('failover', (e) => failovers.push(e));
    s.on('recover', (e) => recoveries.push(e));
    s.on('failover', () => {
      throw new Error('a broken listener changes nothing');
    });
    const c = [{ policy: write, key: fresh('breaker') }];
    try {
      await eventually(() => client.status === 'ready', 'the client to connect');
      expect((await s.decide(c, 1)).allowed).toBe(true);
      await own.kill();
      await eventually(() => client.status !== 'ready', 'the client to notice');
      await s.decide(c, 1);
      expect(s.stats().state).toBe('redis');
      await s.decide(c, 1);
      expect(s.stats()).toMatchObject({ state: 'fallback', failovers: 1 });
      expect(failovers[0].failureMode).toBe('closed');
      const calls = s.stats().scriptCalls;
      for (let i = 0; i < 5; i++) expect((await s.decide(c, 1)).reason).toBe('store_unavailable');
      expect(s.stats()).toMatchObject({ scriptCalls: calls, probes: 0 });
      clock.advance(1000);
      await s.decide(c, 1); // due: sends a probe, which fails
      await eventually(() => s.stats().probes === 1 && s.stats().state === 'fallback', 'the failed probe');
      await own.restart();
      await eventually(() => client.status === 'ready', 'the client to reconnect');
      await eventually(async () => {
        clock.advance(1000);
        await s.decide(c, 1);
        return s.stats().state === 'redis';
      }, 'recovery');
      expect(recoveries).toHaveLength(1);
      expect(recoveries[0].downtimeMs).toBeGreaterThanOrEqual(1000);
      // The bucket is new after the restart (no persistence): Redis decides again.
      expect((await s.decide(c, 1)).outcomes[0].remaining).toBe(28);
      s.off('failover', () => {});
    } finally {
      client.disconnect();
      await own.stop();
    }
  });
});

describe('RedisStore: options and lifecycle', () => {
  it('rejects invalid options naming the option', () => {
    const bad: [Record<string, unknown>, RegExp][] = [
      [{}, /client must be an ioredis/],
      [{ client: {} }, /client must be/],
      [{ client: redis, failureMode: 'maybe' }, /failureMode must be one of/],
      [{ client: redis, timeoutMs: 0 }, /timeoutMs must be an integer from 1/],
      [{ client: redis, nodeCount: 1.5 }, /nodeCount/],
      [{ client: redis, prefix: 7 }, /prefix must be a string/],
      [{ client: redis, hashTag: 'tenant' }, /hashTag must be a function/],
      [{ client: redis, clock: {} }, /clock must have a now/],
      [{ client: redis, denyCache: 'yes' }, /denyCache must be true, false or/],
      [{ client: redis, denyCache: { size: 1 } }, /denyCache.size/],
      [{ client: redis, batch: { maxEntries: 0 } }, /batch.maxEntries/],
      [{ client: redis, breaker: { probeIntervalMs: -1 } }, /breaker.probeIntervalMs/],
      [{ client: redis, retries: 3 }, /RedisStore options.retries/],
    ];
    for (const [options, message] of bad) {
      expect(() => new RedisStore(options as unknown as RedisStoreOptions)).toThrow(message);
    }
    const o = new RedisStore({ client: ioredisClient(redis), denyCache: false }).options;
    expect(Object.isFrozen(o)).toBe(true);
    expect(o).toMatchObject({
      prefix: 'rl:',
      timeoutMs: 50,
      failureMode: 'local',
      nodeCount: 1,
      denyCacheEntries: 0,
    });
    expect(o.client.library).toBe('ioredis');
  });

  it('fails every call after close with ERR_STORE_CLOSED', async () => {
    const { store: s } = store();
    s.close();
    const c = [{ policy: write, key: 'closed' }];
    await expect(s.decide(c, 1)).rejects.toMatchObject({ code: 'ERR_STORE_CLOSED' });
    await expect(s.refund(c, 1)).rejects.toMatchObject({ code: 'ERR_STORE_CLOSED' });
    await expect(s.reset(c)).rejects.toMatchObject({ code: 'ERR_STORE_CLOSED' });
  });

  it('never hands out a decision the script did not make, nor a reply that is not one', async () => {
    const liar = {
      library: 'test',
      cluster: false,
      evalsha: async () => ['0', '1800000'],
      eval: async () => [],
      ping: async () => 'PONG',
    };
    const s = new RedisStore({ client: liar, clock: new ManualClock(START), failureMode: 'closed' });
    expect((await s.decide([{ policy: write, key: 'k' }], 1)).reason).toBe('store_unavailable');
    const odd = new RedisStore({
      client: { ...liar, evalsha: async () => 'OK' },
      clock: new ManualClock(START),
      failureMode: 'closed',
    });
    expect((await odd.decide([{ policy: write, key: 'k' }], 1)).reason).toBe('store_unavailable');
  });
});
