import fc from 'fast-check';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readBucket, type StoredBucket } from '../../../../test/support/redis-bucket.js';
import { type RedisServer, startRedisServer } from '../../../../test/support/redis-server.js';
import { definePolicy, msUntil, nextLast, type Policy, refill } from '../core/index.js';
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
/** Continuous policies of every size the tests below compare paths on. */
const policyShape = {
  quota: fc.integer({ min: 1, max: 500 }),
  window: fc.constantFrom(1, 60, 3600),
  burst: fc.integer({ min: 1, max: 50 }),
};
describe('the script short path for one decide', () => {
  it('is the form the store sends for decides of distinct keys under one continuous policy, and only for those', () => {
    const p = definePolicy({ name: 'rl.one', quota: 10, window: 60, burst: 5 });
    const encode = (e: Entry[]) => new ScriptArgs('0').encode(e);
    // Quota, capacity and units to take.
    const cap = String(5 * p.unitsPerToken);
    // Server clock: no reading and no slack to send.
    expect(encode([{ ...entry(p, 'k', 2, 1_000), now: '' }])).toEqual({
      keys: ['k'],
      args: ['10', cap, String(2 * p.unitsPerToken)],
    });
    // Injected clock: its reading and the TTL slack follow.
    expect(encode([entry(p, 'k', 2, 1_000)])).toEqual({
      keys: ['k'],
      args: ['10', cap, String(2 * p.unitsPerToken), '1000', '0'],
    });
    expect(new ScriptArgs('60000').encode([entry(p, 'k', 0, 7)]).args).toEqual([
      '10',
      cap,
      '0',
      '7',
      '60000',
    ]);
    // The general form: the slack, one policy, and at least fifteen arguments, which the script tells from the
    // short form's three or five.
    const general = (e: Entry[]) => {
      const { args } = encode(e);
      expect(args.length).toBeGreaterThanOrEqual(15);
      return args[1];
    };
    const one = (q: Policy) => general([entry(q, 'k', 1, 1_000)]);
    expect(one(definePolicy({ name: 'rl.s', quota: 10, window: 60, burst: 5, shadow: true }))).toBe('1');
    expect(
      one(definePolicy({ name: 'rl.q', quota: 10, window: 60, queue: { limit: 2, maxWaitMs: 9 } })),
    ).toBe('1');
    expect(one(definePolicy({ name: 'rl.t', refill: { tokens: 5, every: 10 } }))).toBe('1');
    // Several decides of distinct keys at one cost and clock reading: the short form with their keys.
    expect(encode([entry(p, 'a', 1, 1_000), entry(p, 'b', 1, 1_000)])).toEqual({
      keys: ['a', 'b'],
      args: ['10', cap, String(p.unitsPerToken), '1000', '0'],
    });
    // A key twice (the short path reads every bucket before it writes any), costs or clock readings that differ,
    // two policies: the general form.
    expect(general([entry(p, 'a', 1, 1_000), entry(p, 'a', 1, 1_000)])).toBe('1');
    expect(general([entry(p, 'a', 1, 1_000), entry(p, 'b', 2, 1_000)])).toBe('1');
    expect(general([entry(p, 'a', 1, 1_000), entry(p, 'b', 1, 1_001)])).toBe('1');
    const q = definePolicy({ name: 'rl.other', quota: 10, window: 60, burst: 5 });
    expect(general([entry(p, 'a', 1, 1_000), entry(q, 'b', 1, 1_000)])).toBe('2');
    expect(general([{ ...entry(p, 'k', 1, 1_000), op: 'r', mode: 'reserve' }])).toBe('1');
  });

  it('answers, stores and expires exactly like the general path', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.record({
          ...policyShape,
          // Expiry runs in real time while the script's clock is injected: a slack keeps short TTLs from
          // expiring between the two calls being compared.
          slack: fc.constantFrom('60000', '120000'),
        }),
        fc.array(
          fc.record({
            advance: fc.integer({ min: 0, max: 120_000 }),
            cost: fc.nat(60),
            // Which of four buckets the call decides: one (a single decide) or several (a batch).
            which: fc.subarray([0, 1, 2, 3], { minLength: 1 }),
          }),
          { minLength: 1, maxLength: 25 },
        ),
        async ({ quota, window, burst, slack }, ops) => {
          const p = definePolicy({ name: 'rl.fast', quota, window, burst });
          const short = [0, 1, 2, 3].map((i) => `fast:${run}:short:${i}`);
          const general = [0, 1, 2, 3].map((i) => `fast:${run}:general:${i}`);
          run++;
          let now = 1_700_000_000_000;
          for (const op of ops) {
            now += op.advance;
            const a = op.which.map((i) => short[i]);
            const b = op.which.map((i) => general[i]);
            const form = new ScriptArgs(slack).encode(a.map((key) => entry(p, key, op.cost, now)));
            expect(form).toEqual({ keys: a, args: expect.any(Array) });
            expect(form.args).toHaveLength(5);
            const got = await redis.evalsha(sha, a.length, ...a, ...form.args);
            const tail = ['d', String(op.cost), String(now), '1', '1', String(b.length)];
            const want = (await redis.evalsha(
              sha,
              b.length,
              ...b,
              slack,
              '1',
              ...policyArgs(p),
              ...tail,
            )) as (string | number)[];
            // The short form answers per decide one integer: the units before, or -1 minus them for a denial; one
            // decide gets the integer itself.
            const ints = op.which.map((_, i) =>
              want[2 * i] === '1' ? want[2 * i + 1] : -1 - Number(want[2 * i + 1]),
            );
            expect(got).toEqual(a.length === 1 ? ints[0] : ints);
            for (const i of op.which) {
              expect(await redis.get(short[i])).toEqual(await redis.get(general[i]));
              const [ta, tb] = await Promise.all([redis.pttl(short[i]), redis.pttl(general[i])]);
              // Both keys were written a moment apart in real time: their remaining TTLs differ by that moment.
              expect(Math.abs(ta - tb)).toBeLessThanOrEqual(ta < 0 ? 0 : 250);
            }
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
    expect(form.args).toHaveLength(3);
    const before = await serverMs();
    expect(await redis.evalsha(sha, 1, key, ...form.args)).toBe(4 * p.unitsPerToken);
    const after = await serverMs();
    // Three tokens short of full, expiring at the bucket's time plus their refill at `quota` units per ms.
    expect(await redis.get(key)).toBe(String(3 * p.unitsPerToken));
    const b = (await readBucket(redis, key, p))!;
    expect(b.units).toBe(p.unitsPerToken);
    expect(b.last).toBeGreaterThanOrEqual(before);
    expect(b.last).toBeLessThanOrEqual(after);
    expect(b.expiresAt - b.last).toBe(Math.ceil((3 * p.unitsPerToken) / p.quota));
    // Two more tokens than are left: denied (-1 minus the units held), and the bucket is not written.
    const deny = new ScriptArgs('0').encode([{ ...entry(p, key, 2, 0), now: '' }]);
    const reply = (await redis.evalsha(sha, 1, key, ...deny.args)) as number;
    expect(reply).toBeLessThan(0);
    expect(-1 - reply).toBeGreaterThanOrEqual(p.unitsPerToken);
    expect(-1 - reply).toBeLessThan(2 * p.unitsPerToken);
    expect(await redis.get(key)).toBe(String(3 * p.unitsPerToken));
    expect((await readBucket(redis, key, p))!.expiresAt).toBe(b.expiresAt);
  });
});

/** The server's clock in whole milliseconds, as the script reads it. */
async function serverMs(): Promise<number> {
  const [s, us] = (await redis.time()) as [string | number, string | number];
  return Number(s) * 1000 + Math.floor(Number(us) / 1000);
}

// With the server's clock a bucket is stored as its units short of full and expires at its time plus its time to
// full; a call takes its time from the stored expiry (D-R12). Time runs while this test does, so each call is
// bracketed by two readings of the server clock and must match the engine's arithmetic exactly at one instant in
// between: its answer, the value it stores and the absolute expiry it sets.
describe('the server-clock bucket format', () => {
  it('is read and written exactly by both forms, from either stored format, one bucket or several', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.record(policyShape),
        fc.array(
          fc.record({
            stored: fc.constantFrom('none', 'server', 'injected'),
            // The stored level as a fraction of the capacity short of full, and the bucket's time relative to
            // now as a multiple of its time to full: ahead of now (no refill), partly refilled, or long full.
            short: fc.double({ min: 0.001, max: 1, noNaN: true }),
            age: fc.double({ min: -2.5, max: 1, noNaN: true }),
          }),
          { minLength: 1, maxLength: 3 },
        ),
        fc.nat(60),
        async ({ quota, window, burst }, buckets, cost) => {
          const p = definePolicy({ name: 'rl.srvfmt', quota, window, burst });
          const cap = p.capacityUnits;
          const t0 = await serverMs();
          const forms = ['short', 'general'].map((f) => buckets.map((_, j) => `srvfmt:${run}:${f}:${j}`));
          run++;
          for (const keys of forms) {
            for (const [j, b] of buckets.entries()) {
              const d = Math.max(1, Math.floor(cap * b.short));
              const ttf = Math.ceil(d / quota);
              const last = t0 + Math.round(b.age * ttf) + (b.age > 0 ? 1_000 : 0);
              if (b.stored === 'server') await redis.set(keys[j], String(d), 'PXAT', last + ttf);
              // The injected-clock format carries its own time; its expiry includes a slack.
              if (b.stored === 'injected') {
                await redis.set(keys[j], `${cap - d}:${last}`, 'PXAT', last + ttf + 60_000);
              }
            }
          }
          for (const [f, keys] of forms.entries()) {
            const was = await Promise.all(keys.map((k) => readBucket(redis, k, p)));
            const before = await serverMs();
            let replies: number[];
            if (f === 0) {
              const args = new ScriptArgs('0').encode(
                keys.map((k) => ({ ...entry(p, k, cost, 0), now: '' })),
              ).args;
              const reply = (await redis.evalsha(sha, keys.length, ...keys, ...args)) as number | number[];
              replies = typeof reply === 'number' ? [reply] : reply;
            } else {
              const tail = ['d', String(cost), '', '1', '1', String(keys.length)];
              const reply = (await redis.evalsha(
                sha,
                keys.length,
                ...keys,
                '0',
                '1',
                ...policyArgs(p),
                ...tail,
              )) as (string | number)[];
              replies = keys.map((_, j) =>
                reply[2 * j] === '1' ? Number(reply[2 * j + 1]) : -1 - Number(reply[2 * j + 1]),
              );
            }
            const after = await serverMs();
            const now = await Promise.all(keys.map((k) => readBucket(redis, k, p)));
            const read = await serverMs();
            for (const [j, r] of replies.entries()) {
              const call = { before, after, read, allowed: r >= 0, units: r >= 0 ? r : -1 - r };
              const ok = matchesEngine(p, cost, buckets[j].stored === 'injected', was[j], now[j], call);
              expect(ok, JSON.stringify({ f, j, was: was[j], now: now[j], ...call })).toBe(true);
            }
          }
        },
      ),
      { numRuns: 150 },
    );
  });
});

describe('a server-clock bucket without an expiry (a PERSIST from outside)', () => {
  it('refills from the call on, never from before, and is written back with an expiry, on both paths', async () => {
    const p = definePolicy({ name: 'rl.persist', quota: 6, window: 60, burst: 4 });
    const d = 3 * p.unitsPerToken;
    const keys = [0, 1, 2].map((i) => `persist:${run}:${i}`);
    run++;
    for (const key of keys) await redis.set(key, String(d));
    const before = await serverMs();
    // The short form for one key, the short form for a batch, the general form.
    const one = new ScriptArgs('0').encode([{ ...entry(p, keys[0], 1, 0), now: '' }]).args;
    expect(await redis.evalsha(sha, 1, keys[0], ...one)).toBe(p.capacityUnits - d);
    const two = new ScriptArgs('0').encode(
      [keys[1], 'persist:fresh'].map((k) => ({ ...entry(p, k, 1, 0), now: '' })),
    );
    expect(await redis.evalsha(sha, 2, ...two.keys, ...two.args)).toEqual([
      p.capacityUnits - d,
      p.capacityUnits,
    ]);
    const tail = ['d', '1', '', '1', '1', '1'];
    expect(await redis.evalsha(sha, 1, keys[2], '0', '1', ...policyArgs(p), ...tail)).toEqual([
      '1',
      p.capacityUnits - d,
    ]);
    const after = await serverMs();
    for (const key of keys) {
      const b = (await readBucket(redis, key, p))!;
      expect(b.raw).toBe(String(d + p.unitsPerToken));
      expect(b.last).toBeGreaterThanOrEqual(before);
      expect(b.last).toBeLessThanOrEqual(after);
    }
  });
});

/**
 * True when a call's answer for one bucket and what it left stored are the engine's arithmetic at one instant of
 * the server clock between `before` and `after`. A bucket whose expiry passed before it was read back (`read`) is
 * gone: time to full of a millisecond or two.
 */
function matchesEngine(
  p: Policy,
  cost: number,
  injected: boolean,
  was: StoredBucket | undefined,
  now: StoredBucket | undefined,
  call: { before: number; after: number; read: number; allowed: boolean; units: number },
): boolean {
  const cap = p.capacityUnits;
  const need = cost * p.unitsPerToken;
  const gone = (expiresAt: number) => now === undefined && expiresAt < call.read;
  for (let t = call.before; t <= call.after; t++) {
    // The engine's own refill; a missing (or expired) bucket is full.
    const stored = was !== undefined && (injected || was.expiresAt >= t);
    const u = stored ? refill(p, was.units, t - was.last) : cap;
    const ok = need <= cap && u >= need;
    if (ok !== call.allowed || u !== call.units) continue;
    if (!ok || need === 0) {
      const same = now?.raw === was?.raw && now?.expiresAt === was?.expiresAt;
      if (same || (was !== undefined && gone(was.expiresAt))) return true;
    } else {
      const left = cap - (u - need);
      const expiresAt = nextLast(p, u, stored ? was.last : t, t) + msUntil(p, cap - left, cap);
      if ((now?.raw === String(left) && now.expiresAt === expiresAt) || gone(expiresAt)) return true;
    }
  }
  return false;
}
