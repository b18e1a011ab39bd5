/**
 * Concurrency slots on the Redis store: taken in the decide script all or nothing with the rate policies, held
 * per store instance as leases, given back by a release, and by the lease's expiry when the holding instance
 * stops renewing (it crashed, or lost Redis). Real redis-server; the stores' clock is a `ManualClock`, whose
 * readings the script uses as its time, so leases expire when a test advances it.
 */
import fc from 'fast-check';
import { Cluster, Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  type RedisCluster,
  type RedisServer,
  startRedisCluster,
  startRedisServer,
} from '../../../../test/support/redis-server.js';
import { type Check, definePolicy, Limiter, ManualClock, type Policy } from '../core/index.js';
import { ioredisClient, type RedisScriptClient, RedisStore, type RedisStoreOptions } from './index.js';

const START = 1_700_000_000_000;
const LEASE = 3_000;
const slots = definePolicy({ name: 'reports', concurrent: 3, retryAfter: 2 });
const rate = definePolicy({ name: 'rl', quota: 2, window: 60, burst: 2 });
let n = 0;
const fresh = (label: string) => `${label}-${n++}`;

let server: RedisServer;
let cluster: RedisCluster;
let redis: Redis;
let clustered: Cluster;

beforeAll(async () => {
  [server, cluster] = await Promise.all([startRedisServer(), startRedisCluster()]);
  redis = new Redis({ host: server.host, port: server.port });
  clustered = new Cluster([...cluster.startupNodes]);
});

afterAll(async () => {
  await Promise.allSettled([redis?.quit(), clustered?.quit()]);
  await Promise.allSettled([server?.stop(), cluster?.stop()]);
});

function pair(extra: Partial<RedisStoreOptions> = {}) {
  const clock = new ManualClock(START);
  const make = () =>
    new RedisStore({ client: redis, clock, timeoutMs: 10_000, leaseTimeMs: LEASE, ...extra });
  return { clock, a: make(), b: make() };
}

const on = (p: Policy, key: string): Check[] => [{ policy: p, key }];

describe('RedisStore: concurrency slots', () => {
  it('counts slots across two stores exactly: the N+1-th is refused wherever it comes, a release frees one', async () => {
    const { a, b } = pair();
    const key = fresh('c');
    const got = await Promise.all([
      a.decide(on(slots, key), 1),
      b.decide(on(slots, key), 1),
      a.decide(on(slots, key), 1),
    ]);
    expect(got.map((d) => d.allowed)).toEqual([true, true, true]);
    const refused = await b.decide(on(slots, key), 1);
    expect(refused.allowed).toBe(false);
    expect(refused.retryAfterSeconds).toBe(2);
    expect(refused.outcomes[0].remaining).toBe(0);
    await a.refund(on(slots, key), 1);
    expect((await b.decide(on(slots, key), 1)).allowed).toBe(true);
    expect((await a.decide(on(slots, key), 1)).allowed).toBe(false);
    a.close();
    b.close();
  });

  it('takes nothing from either when the rate policy refuses, and nothing from the rate policy when the slots do', async () => {
    const { a, b } = pair();
    const key = fresh('c');
    const both = [...on(rate, key), ...on(slots, key)];
    expect((await a.decide(both, 1)).allowed).toBe(true);
    expect((await b.decide(both, 1)).allowed).toBe(true);
    // The rate policy is empty: the slot is not taken.
    const refused = await a.decide(both, 1);
    expect(refused.allowed).toBe(false);
    expect(refused.violated.map((o) => o.policy.name)).toEqual(['rl']);
    expect((await b.peek(on(slots, key), 1)).outcomes[0].remaining).toBe(1);
    // The slots are full: the rate token is not taken.
    const other = fresh('c');
    const wide = [...on(rate, other), ...on(slots, key)];
    expect((await a.decide(on(slots, key), 1)).allowed).toBe(true);
    expect((await a.decide(wide, 1)).allowed).toBe(false);
    expect((await a.peek(on(rate, other), 1)).outcomes[0].remaining).toBe(2);
    a.close();
    b.close();
  });

  it('never refills by time while the holder renews its lease', async () => {
    const { clock, a, b } = pair();
    const key = fresh('c');
    for (let i = 0; i < 3; i++) expect((await a.decide(on(slots, key), 1)).allowed).toBe(true);
    for (let i = 0; i < 5; i++) {
      clock.advance(LEASE - 1);
      await a.renewLeases();
      expect((await b.decide(on(slots, key), 1)).allowed).toBe(false);
    }
    a.close();
    b.close();
  });

  it("gives a dead instance's slots back once its lease runs out, and only then", async () => {
    const { clock, a, b } = pair();
    const key = fresh('c');
    expect((await a.decide(on(slots, key), 2)).allowed).toBe(true);
    expect((await b.decide(on(slots, key), 1)).allowed).toBe(true);
    a.close(); // crashed: it renews no more, and never releases
    clock.advance(LEASE - 1);
    await b.renewLeases();
    expect((await b.decide(on(slots, key), 1)).allowed).toBe(false);
    clock.advance(1);
    await b.renewLeases();
    // b's own slot is kept (renewed), a's two are back.
    expect((await b.peek(on(slots, key), 1)).outcomes[0].remaining).toBe(2);
    expect((await b.decide(on(slots, key), 2)).allowed).toBe(true);
    expect((await b.decide(on(slots, key), 1)).allowed).toBe(false);
    b.close();
  });

  it("a release gives back only what this instance holds, never another instance's slots", async () => {
    const { a, b } = pair();
    const key = fresh('c');
    expect((await a.decide(on(slots, key), 3)).allowed).toBe(true);
    await b.refund(on(slots, key), 3);
    expect((await b.decide(on(slots, key), 1)).allowed).toBe(false);
    a.close();
    b.close();
  });

  it('a release lost while Redis was unreachable is corrected at the next renewal', async () => {
    const clock = new ManualClock(START);
    const inner = ioredisClient(redis);
    let lost = false;
    // The connection drops the calls while `lost` is set, as a broken link does: a fault, not a model of Redis.
    const flaky: RedisScriptClient = {
      ...inner,
      evalsha: (sha, keys, args) =>
        lost ? Promise.reject(new Error('connection lost')) : inner.evalsha(sha, keys, args),
    };
    const a = new RedisStore({ client: flaky, clock, timeoutMs: 10_000, leaseTimeMs: LEASE });
    const b = new RedisStore({ client: redis, clock, timeoutMs: 10_000, leaseTimeMs: LEASE });
    const key = fresh('c');
    expect((await a.decide(on(slots, key), 3)).allowed).toBe(true);
    lost = true;
    await a.refund(on(slots, key), 2);
    lost = false;
    expect((await b.peek(on(slots, key), 1)).outcomes[0].remaining).toBe(0);
    // The renewal sets what a holds in Redis to what it still runs.
    await a.renewLeases();
    expect((await b.peek(on(slots, key), 1)).outcomes[0].remaining).toBe(2);
    a.close();
    b.close();
  });

  it('a store whose lease ended while its requests still run counts them again at its next renewal', async () => {
    const { clock, a, b } = pair();
    const key = fresh('c');
    expect((await a.decide(on(slots, key), 2)).allowed).toBe(true);
    // a stalled for longer than its lease (a paused event loop): its slots stopped counting meanwhile.
    clock.advance(LEASE * 2);
    await a.renewLeases();
    expect((await b.peek(on(slots, key), 1)).outcomes[0].remaining).toBe(1);
    await a.refund(on(slots, key), 2);
    expect((await b.peek(on(slots, key), 1)).outcomes[0].remaining).toBe(3);
    a.close();
    b.close();
  });

  it('works on a Redis Cluster: the lease data of a key lives in its hash tag', async () => {
    const clock = new ManualClock(START);
    const make = () => new RedisStore({ client: clustered, clock, timeoutMs: 10_000, leaseTimeMs: LEASE });
    const [a, b] = [make(), make()];
    const keys = Array.from({ length: 8 }, () => fresh('k'));
    for (const k of keys) {
      expect((await a.decide([...on(rate, k), ...on(slots, k)], 3)).allowed).toBe(false);
      expect((await a.decide(on(slots, k), 3)).allowed).toBe(true);
      expect((await b.decide(on(slots, k), 1)).allowed).toBe(false);
    }
    a.close();
    clock.advance(LEASE);
    for (const k of keys) expect((await b.decide(on(slots, k), 3)).allowed).toBe(true);
    b.close();
  });

  it('follows the failure mode while Redis is down: open admits, closed denies, local counts the slots here', async () => {
    const down = new Redis({ host: '127.0.0.1', port: 1, enableOfflineQueue: false, lazyConnect: true });
    down.on('error', () => {});
    const key = fresh('down');
    const make = (failureMode: 'open' | 'closed' | 'local') =>
      new RedisStore({ client: down, failureMode, clock: new ManualClock(START), leaseTimeMs: LEASE });
    const open = make('open');
    const closed = make('closed');
    const local = make('local');
    for (let i = 0; i < 5; i++) {
      expect((await open.decide(on(slots, key), 1)).reason).toBe('store_unavailable_open');
      expect((await closed.decide(on(slots, key), 1)).reason).toBe('store_unavailable');
    }
    const got = [];
    for (let i = 0; i < 4; i++) got.push((await local.decide(on(slots, key), 1)).allowed);
    expect(got).toEqual([true, true, true, false]);
    await local.refund(on(slots, key), 1);
    expect((await local.decide(on(slots, key), 1)).allowed).toBe(true);
    // With three gateways each holds a third of the slots locally, and time gives none back.
    const clock = new ManualClock(START);
    const third = new RedisStore({
      client: down,
      failureMode: 'local',
      nodeCount: 3,
      clock,
      leaseTimeMs: LEASE,
    });
    expect((await third.decide(on(slots, key), 1)).allowed).toBe(true);
    clock.advance(60_000);
    expect((await third.decide(on(slots, key), 1)).allowed).toBe(false);
    for (const s of [open, closed, local, third]) s.close();
    down.disconnect();
  });

  it('refuses a lease time out of range, naming the option', () => {
    expect(() => new RedisStore({ client: redis, leaseTimeMs: 10 })).toThrow(/leaseTimeMs.*1000.*10/s);
  });

  it('the Limiter accepts a concurrency policy on the Redis store', async () => {
    const { a, b } = pair();
    const limiter = new Limiter({ policies: [slots], store: a });
    expect((await limiter.check('reports', fresh('l'))).allowed).toBe(true);
    a.close();
    b.close();
  });
});

/** One step of the property: a request starts on store s, or the i-th running request ends or is aborted. */
type Step =
  | { readonly op: 'take'; readonly s: number; readonly cost: number }
  | { readonly op: 'end'; readonly i: number }
  | { readonly op: 'renew'; readonly s: number };

const step: fc.Arbitrary<Step> = fc.oneof(
  {
    weight: 3,
    arbitrary: fc.record({
      op: fc.constant('take' as const),
      s: fc.integer({ min: 0, max: 1 }),
      cost: fc.integer({ min: 1, max: 2 }),
    }),
  },
  { weight: 2, arbitrary: fc.record({ op: fc.constant('end' as const), i: fc.nat() }) },
  {
    weight: 1,
    arbitrary: fc.record({ op: fc.constant('renew' as const), s: fc.integer({ min: 0, max: 1 }) }),
  },
);

describe('RedisStore: concurrency slots under interleavings', () => {
  it('in flight never exceeds N nor goes negative across two stores, whatever order calls overlap in', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.array(step, { minLength: 1, maxLength: 4 }), { maxLength: 12 }),
        async (rounds) => {
          const { a, b } = pair();
          const stores = [a, b];
          const key = fresh('p');
          const running: { s: number; cost: number }[] = [];
          let inFlight = 0;
          for (const round of rounds) {
            // The steps of a round run at once: their script calls share batches and overlap.
            const ended = new Set<number>();
            await Promise.all(
              round.map(async (st) => {
                if (st.op === 'renew') return stores[st.s].renewLeases();
                if (st.op === 'end') {
                  if (running.length === 0) return;
                  const i = st.i % running.length;
                  if (ended.has(i)) return;
                  ended.add(i);
                  const r = running[i];
                  inFlight -= r.cost;
                  return stores[r.s].refund(on(slots, key), r.cost);
                }
                const d = await stores[st.s].decide([...on(slots, key)], st.cost);
                if (d.allowed) {
                  inFlight += st.cost;
                  running.push({ s: st.s, cost: st.cost });
                }
                expect(inFlight).toBeLessThanOrEqual(3);
              }),
            );
            for (const i of [...ended].sort((x, y) => y - x)) running.splice(i, 1);
            expect(inFlight).toBeGreaterThanOrEqual(0);
            // What Redis counts is exactly what runs: the free slots are N less the running cost.
            const free = (await a.peek(on(slots, key), 1)).outcomes[0].remaining;
            expect(free).toBe(3 - inFlight);
          }
          a.close();
          b.close();
        },
      ),
      { numRuns: 60 },
    );
  });
});
