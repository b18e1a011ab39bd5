import fc from 'fast-check';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type RedisServer, startRedisServer } from '../../../../test/support/redis-server.js';
import { definePolicy, type Policy } from '../core/index.js';
import type { Entry } from './batch-queue.js';
import { SCRIPT } from './lua-script.js';
import { policyArgs, ScriptArgs } from './script-args.js';

// The script answers the common call (one decide of one key under one continuous policy without queue or shadow
// mode), sent in a short form, on a shorter path than every other call. This holds the two paths equal: the same
// decide goes once in the short form and once in the general form.

let server: RedisServer;
let redis: Redis;
let sha: string;
beforeAll(async () => {
  server = await startRedisServer();
  redis = new Redis({ host: server.host, port: server.port });
  sha = (await redis.script('LOAD', SCRIPT)) as string;
});
afterAll(async () => {
  await redis?.quit();
  await server?.stop();
});

function entry(p: Policy, key: string, cost: number, now: number): Entry {
  return {
    op: 'd',
    mode: 'decide',
    checks: [{ policy: p, key }],
    keys: [key],
    cost,
    now: String(now),
    local: now,
    denyEpoch: 0,
    slot: 0,
    queuedAt: 0,
    resolve: () => {},
    reject: () => {},
  };
}

let run = 0;
describe('the script short path for one decide', () => {
  it('is the form the store sends for one decide of one continuous policy, and only for that', () => {
    const p = definePolicy({ name: 'rl.one', quota: 10, window: 60, burst: 5 });
    const encode = (e: Entry[]) => new ScriptArgs('0').encode(e);
    expect(encode([entry(p, 'k', 2, 1_000)])).toEqual({
      keys: ['k'],
      args: ['0', 'D', '10', String(p.unitsPerToken), '5', '2', '1000'],
    });
    const general = (q: Policy) => encode([entry(q, 'k', 1, 1_000)]).args[1];
    expect(general(definePolicy({ name: 'rl.s', quota: 10, window: 60, burst: 5, shadow: true }))).toBe('1');
    expect(
      general(definePolicy({ name: 'rl.q', quota: 10, window: 60, queue: { limit: 2, maxWaitMs: 9 } })),
    ).toBe('1');
    expect(general(definePolicy({ name: 'rl.t', refill: { tokens: 5, every: 10 } }))).toBe('1');
    expect(encode([entry(p, 'a', 1, 1_000), entry(p, 'b', 1, 1_000)]).args[1]).toBe('1');
    expect(encode([{ ...entry(p, 'k', 1, 1_000), op: 'r', mode: 'reserve' }]).args[1]).toBe('1');
  });

  it('answers, stores and expires exactly like the general path', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.record({
          quota: fc.integer({ min: 1, max: 500 }),
          window: fc.constantFrom(1, 60, 3600),
          burst: fc.integer({ min: 1, max: 50 }),
          // Expiry runs in real time while the script's clock is injected: a slack keeps short TTLs from
          // expiring between the two calls being compared.
          slack: fc.constantFrom('60000', '120000'),
        }),
        fc.array(fc.record({ advance: fc.integer({ min: 0, max: 120_000 }), cost: fc.nat(60) }), {
          minLength: 1,
          maxLength: 25,
        }),
        async ({ quota, window, burst, slack }, ops) => {
          const p = definePolicy({ name: 'rl.fast', quota, window, burst });
          const short = `fast:${run}:short`;
          const general = `fast:${run++}:general`;
          let now = 1_700_000_000_000;
          for (const op of ops) {
            now += op.advance;
            const [q, upt, b0] = policyArgs(p);
            const a = await redis.evalsha(
              sha,
              1,
              short,
              slack,
              'D',
              q,
              upt,
              b0,
              String(op.cost),
              String(now),
            );
            const tail = ['d', String(op.cost), String(now), '1', '1', '1'];
            const b = await redis.evalsha(sha, 1, general, slack, '1', ...policyArgs(p), ...tail);
            expect(a).toEqual(b);
            expect(await redis.get(short)).toEqual(await redis.get(general));
            const [ta, tb] = await Promise.all([redis.pttl(short), redis.pttl(general)]);
            // Both keys were written a moment apart in real time: their remaining TTLs differ by that moment.
            expect(Math.abs(ta - tb)).toBeLessThanOrEqual(ta < 0 ? 0 : 250);
          }
        },
      ),
      { numRuns: 120 },
    );
  });
});
