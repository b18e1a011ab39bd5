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
    // Quota, capacity and units to take.
    const cap = String(5 * p.unitsPerToken);
    // Server clock: no reading and no slack to send.
    expect(encode([{ ...entry(p, 'k', 2, 1_000), now: '' }])).toEqual({
      keys: ['k'],
      args: ['D', '10', cap, String(2 * p.unitsPerToken)],
    });
    // Injected clock: its reading and the TTL slack follow.
    expect(encode([entry(p, 'k', 2, 1_000)])).toEqual({
      keys: ['k'],
      args: ['D', '10', cap, String(2 * p.unitsPerToken), '1000', '0'],
    });
    expect(new ScriptArgs('60000').encode([entry(p, 'k', 0, 7)]).args).toEqual([
      'D',
      '10',
      cap,
      '0',
      '7',
      '60000',
    ]);
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
            const form = new ScriptArgs(slack).encode([entry(p, short, op.cost, now)]);
            expect(form.args[0]).toBe('D');
            const a = await redis.evalsha(sha, 1, short, ...form.args);
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

  it('reads the server clock when the short form carries no reading', async () => {
    const p = definePolicy({ name: 'rl.srv', quota: 6, window: 60, burst: 4 });
    const key = `fast:${run++}:server-clock`;
    const form = new ScriptArgs('0').encode([{ ...entry(p, key, 3, 0), now: '' }]);
    expect(form.args).toHaveLength(4);
    const time = async () => {
      const [s, us] = (await redis.time()) as [string | number, string | number];
      return Number(s) * 1000 + Math.floor(Number(us) / 1000);
    };
    const before = await time();
    expect(await redis.evalsha(sha, 1, key, ...form.args)).toEqual(['1', 4 * p.unitsPerToken]);
    const after = await time();
    const [units, last] = String(await redis.get(key))
      .split(':')
      .map(Number);
    expect(units).toBe(p.unitsPerToken);
    expect(last).toBeGreaterThanOrEqual(before);
    expect(last).toBeLessThanOrEqual(after);
    // Three tokens short, refilled at `quota` units per ms, and no slack.
    const pttl = await redis.pttl(key);
    expect(pttl).toBeGreaterThan(0);
    expect(pttl).toBeLessThanOrEqual(Math.ceil((3 * p.unitsPerToken) / p.quota));
    // Two more tokens than are left: denied, and the bucket is not written.
    const deny = new ScriptArgs('0').encode([{ ...entry(p, key, 2, 0), now: '' }]);
    expect(await redis.evalsha(sha, 1, key, ...deny.args)).toEqual(['0', expect.any(Number)]);
    expect(String(await redis.get(key)).split(':')[0]).toBe(String(p.unitsPerToken));
  });
});
