/**
 * Costs settled after the response, on every store: memory, the shared table and Redis (a real redis-server).
 * The property: after any interleaving of reservations (admission at a reserved cost), settlements (the cost the
 * response turned out to have) and aborts (a client gone: the reservation stands), the bucket is short of full by
 * exactly the costs actually charged. The clock stands still, so nothing refills and the sum is exact.
 */
import fc from 'fast-check';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type RedisServer, startRedisServer } from '../../../test/support/redis-server.js';
import { type Check, definePolicy, ManualClock, type RateLimitStore } from '../src/core/index.js';
import { MemoryStore } from '../src/memory/index.js';
import { RedisStore } from '../src/redis/index.js';
import { SharedStore } from '../src/shared/index.js';
import { ReferenceStore } from '../src/testing/index.js';

const START = 1_700_000_000_000;
// One token a second: the reset seconds of a bucket are the tokens it is short of full.
const tokens = definePolicy({ name: 'rl.tokens', quota: 60, window: 60, burst: 60 });
const requests = definePolicy({ name: 'rl.requests', quota: 60, window: 60, burst: 40 });

interface Request {
  readonly reserve: number;
  /** What the response turned out to cost; `undefined`: the client went away and the reservation stands. */
  readonly actual: number | undefined;
}
const requestArb: fc.Arbitrary<Request> = fc.record({
  reserve: fc.integer({ min: 1, max: 6 }),
  actual: fc.option(fc.integer({ min: 0, max: 9 }), { nil: undefined }),
});

/** Each request's admission and its end, in an order fast-check picks (an end never before its admission). */
const scenarioArb = fc.array(requestArb, { minLength: 1, maxLength: 12 }).chain((reqs) =>
  fc
    .shuffledSubarray(
      reqs.flatMap((_, i) => [i * 2, i * 2 + 1]),
      { minLength: reqs.length * 2, maxLength: reqs.length * 2 },
    )
    .map((order) => {
      // Put each end after its admission while keeping the drawn interleaving otherwise.
      const seen = new Set<number>();
      const out: number[] = [];
      for (const step of order) {
        const admission = step - (step % 2);
        if (step % 2 === 1 && !seen.has(admission)) {
          out.push(admission);
          seen.add(admission);
        }
        if (!seen.has(step)) {
          out.push(step);
          seen.add(step);
        }
      }
      return { reqs, order: out };
    }),
);

async function run(
  make: (clock: ManualClock) => RateLimitStore,
  label: string,
  concurrent: boolean,
  runs: number,
): Promise<void> {
  let n = 0;
  await fc.assert(
    fc.asyncProperty(scenarioArb, async ({ reqs, order }) => {
      const clock = new ManualClock(START);
      const store = make(clock);
      const key = `${label}:${n++}`;
      const checks: Check[] = [
        { policy: tokens, key },
        { policy: requests, key },
      ];
      const admitted = new Array<boolean>(reqs.length).fill(false);
      let charged = 0;
      const step = async (s: number) => {
        const r = reqs[s >> 1];
        if (s % 2 === 0) {
          const d = await store.decide(checks, r.reserve);
          admitted[s >> 1] = d.allowed;
        } else if (admitted[s >> 1]) {
          const cost = r.actual ?? r.reserve;
          charged += cost;
          if (cost !== r.reserve) await store.settle?.(checks, cost - r.reserve);
        }
      };
      if (concurrent) {
        // Admissions in flight together, each end chained after its own admission: the batch decides the order.
        const admissions = new Map<number, Promise<void>>();
        const all: Promise<void>[] = [];
        for (const s of order) {
          if (s % 2 === 0) {
            const p = step(s);
            admissions.set(s, p);
            all.push(p);
          } else all.push((admissions.get(s - 1) as Promise<void>).then(() => step(s)));
        }
        await Promise.all(all);
      } else {
        for (const s of order) await step(s);
      }
      const d = await store.peek(checks, 1);
      // Short of full by exactly the tokens charged (at most 12 x 9 < 2 bursts: never clamped by the debt floor).
      expect(d.outcomes[0].resetSeconds).toBe(charged);
      await store.close();
    }),
    { numRuns: runs },
  );
}

describe('settled costs: the bucket equals the sum of the costs charged', () => {
  it('on the reference model', async () => {
    await run((clock) => new ReferenceStore(clock), 'ref', false, 200);
  });
  it('on the memory store', async () => {
    await run((clock) => new MemoryStore({ clock, sweepIntervalMs: 0 }), 'mem', false, 200);
  });
  it('on the shared table', async () => {
    await run((clock) => new SharedStore({ clock, sweepIntervalMs: 0 }), 'shared', false, 100);
  });

  describe('on Redis', () => {
    let server: RedisServer;
    let redis: Redis;
    beforeAll(async () => {
      server = await startRedisServer();
      redis = new Redis({ host: server.host, port: server.port });
    }, 30_000);
    afterAll(async () => {
      redis?.disconnect();
      await server?.stop();
    });

    it('with batching, calls in flight together', async () => {
      await run((clock) => new RedisStore({ client: redis, clock, timeoutMs: 10_000 }), 'redis', true, 60);
    });

    it('refills from a settled debt after a long idle time, on the general and the one-policy path', async () => {
      const clock = new ManualClock(START);
      const s = new RedisStore({ client: redis, clock, timeoutMs: 10_000 });
      const c: Check[] = [{ policy: requests, key: 'idle' }];
      await s.settle(c, 80);
      expect((await s.peek(c, 1)).outcomes[0].resetSeconds).toBe(80);
      clock.advance(10 * 24 * 3_600_000);
      expect((await s.peek(c, 1)).outcomes[0].remaining).toBe(40);
      await s.settle(c, 80);
      clock.advance(10 * 24 * 3_600_000);
      const d = await s.decide(c, 1);
      expect(d.allowed).toBe(true);
      expect(d.outcomes[0].remaining).toBe(39);
    });
  });
});

describe('a settled charge beyond the bucket', () => {
  it('leaves a debt of at most one burst, shown in t and Retry-After, and a refund never above the burst', () => {
    const clock = new ManualClock(START);
    const s = new MemoryStore({ clock, sweepIntervalMs: 0 });
    const c: Check[] = [{ policy: requests, key: 'k' }];
    s.settle(c, 1_000);
    const d = s.peek(c, 1);
    expect(d.allowed).toBe(false);
    expect(d.outcomes[0].remaining).toBe(0);
    // 40 owed below zero plus 40 to fill, at one token a second.
    expect(d.outcomes[0].resetSeconds).toBe(80);
    expect(d.retryAfterSeconds).toBe(41);
    s.settle(c, -1_000);
    expect(s.peek(c, 1).outcomes[0].resetSeconds).toBe(0);
  });

  it('owes less than a burst only where one more would leave exact integers', () => {
    const huge = definePolicy({ name: 'rl.huge', quota: 1, window: 1, burst: 9_000_000_000_000 });
    expect(huge.settleDebtUnits).toBeLessThan(huge.capacityUnits);
    expect(huge.capacityUnits + huge.settleDebtUnits + huge.quota).toBeLessThanOrEqual(
      Number.MAX_SAFE_INTEGER,
    );
    expect(requests.settleDebtUnits).toBe(requests.capacityUnits);
  });

  it('refills from the debt after a long idle time', () => {
    const clock = new ManualClock(START);
    const s = new MemoryStore({ clock, sweepIntervalMs: 0 });
    const c: Check[] = [{ policy: requests, key: 'k' }];
    s.settle(c, 80);
    clock.advance(10 * 24 * 3_600_000);
    expect(s.peek(c, 1).outcomes[0].remaining).toBe(40);
  });
});
