/**
 * Concurrent calls against the sequential model: decide, peek, refund and reset calls are started together
 * (some only once an earlier call of the same round has resolved), their promises resolve in an order fast-check
 * chooses, and the answers must be the reference model's for some order of the calls that respects real time
 * (rounds in turn; within a round a call started after another resolved comes after it). Runs on the memory store and on the Redis store (deny cache and batching on, and batching off),
 * against a real redis-server.
 */
import { isDeepStrictEqual } from 'node:util';
import fc from 'fast-check';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type RedisServer, startRedisServer } from '../../../../test/support/redis-server.js';
import {
  type Check,
  type Decision,
  definePolicy,
  ManualClock,
  type Policy,
  type RateLimitStore,
} from '../core/index.js';
import { MemoryStore } from '../memory/index.js';
import { ReferenceStore } from '../testing/index.js';
import { RedisStore } from './index.js';

const START = 1_700_000_000_000;
const odd = definePolicy({ name: 'rl.odd', quota: 7, window: 60, burst: 3 });
const write = definePolicy({ name: 'rl.write', quota: 120, window: 60, burst: 5 });
const POLICIES: Policy[] = [odd, write];

type Kind = 'decide' | 'peek' | 'refund' | 'reset';
interface Op {
  readonly kind: Kind;
  readonly which: number[];
  readonly key: number;
  readonly cost: number;
  /** Index of an earlier call of the round this one starts after (once it resolved), or -1: at the round's start. */
  readonly after: number;
}
interface Round {
  readonly advance: number;
  readonly ops: Op[];
}

const opArb = (index: number): fc.Arbitrary<Op> =>
  fc.record({
    kind: fc.constantFrom<Kind>('decide', 'decide', 'decide', 'peek', 'refund', 'reset'),
    which: fc.subarray([0, 1], { minLength: 1 }),
    key: fc.integer({ min: 0, max: 1 }),
    cost: fc.integer({ min: 1, max: 3 }),
    after: fc.integer({ min: -1, max: index - 1 }),
  });
const roundArb: fc.Arbitrary<Round> = fc.record({
  advance: fc.oneof(fc.constant(0), fc.integer({ min: 1, max: 9_000 })),
  ops: fc
    .integer({ min: 1, max: 4 })
    .chain((n) => fc.tuple(...Array.from({ length: n }, (_, i) => opArb(i)))),
});

/** The facts of a decision that callers and headers see. */
function facts(d: Decision | undefined) {
  if (d === undefined) return undefined;
  return {
    allowed: d.allowed,
    reason: d.reason,
    retryAfterSeconds: d.retryAfterSeconds,
    delayMs: d.delayMs,
    outcomes: d.outcomes.map((o) => [o.policy.name, o.limited, o.remaining, o.resetSeconds]),
  };
}

async function call(store: RateLimitStore, op: Op, checks: Check[]): Promise<Decision | undefined> {
  if (op.kind === 'decide') return store.decide(checks, op.cost);
  if (op.kind === 'peek') return store.peek(checks, op.cost);
  if (op.kind === 'refund') await store.refund(checks, op.cost);
  else await store.reset(checks);
  return undefined;
}

interface Done {
  readonly now: number;
  readonly op: Op;
  readonly checks: Check[];
}

/** Orders of a round's calls that respect real time: a call never precedes the call it started after. */
function* orders(ops: readonly Op[]): Generator<number[]> {
  const used = new Array<boolean>(ops.length).fill(false);
  const order: number[] = [];
  function* walk(): Generator<number[]> {
    if (order.length === ops.length) yield [...order];
    for (let i = 0; i < ops.length; i++) {
      if (used[i] || (ops[i].after >= 0 && !used[ops[i].after])) continue;
      used[i] = true;
      order.push(i);
      yield* walk();
      order.pop();
      used[i] = false;
    }
  }
  yield* walk();
}

/** The reference model's answers to `calls`, applied one at a time in that order. */
function replay(calls: readonly Done[]) {
  const clock = new ManualClock(START);
  const model = new ReferenceStore(clock);
  return calls.map(({ now, op, checks }) => {
    clock.set(now);
    if (op.kind === 'decide') return facts(model.decide(checks, op.cost));
    if (op.kind === 'peek') return facts(model.peek(checks, op.cost));
    if (op.kind === 'refund') model.refund(checks, op.cost);
    else model.reset(checks);
    return undefined;
  });
}

interface Answered extends Done {
  readonly answer: ReturnType<typeof facts>;
}

/**
 * True when some order of the calls, round after round, each round's calls in an order that respects real time,
 * gives every call the answer it got (a linearization). A local answer (the deny cache) may take effect before a
 * concurrent call started earlier, so the order the calls were started in is not enough.
 */
function linearizable(rounds: readonly Answered[][], prefix: Answered[] = []): boolean {
  const r = prefix.length === 0 ? 0 : rounds.findIndex((round) => !prefix.includes(round[0]));
  if (r < 0 || r >= rounds.length) return true;
  const round = rounds[r];
  for (const order of orders(round.map((c) => c.op))) {
    const calls = [...prefix, ...order.map((i) => round[i])];
    const want = replay(calls).slice(prefix.length);
    if (!order.every((i, at) => isDeepStrictEqual(want[at], round[i].answer))) continue;
    if (linearizable(rounds, calls)) return true;
  }
  return false;
}

async function checkRounds(
  store: RateLimitStore,
  clock: ManualClock,
  label: string,
  rounds: Round[],
  s: fc.Scheduler,
) {
  const keys = [`${label}:a`, `${label}:b`];
  const answered: Answered[][] = [];
  for (const round of rounds) {
    clock.advance(round.advance);
    const now = clock.now();
    const calls = round.ops.map((op) => ({
      now,
      op,
      checks: op.which.map((w) => ({ policy: POLICIES[w], key: keys[op.key] })),
    }));
    const results = new Array<Promise<Decision | undefined>>(calls.length);
    for (let i = 0; i < calls.length; i++) {
      const start = () => s.schedule(call(store, calls[i].op, calls[i].checks), `${calls[i].op.kind} #${i}`);
      const after = calls[i].op.after;
      results[i] = after < 0 ? start() : results[after].then(start);
    }
    const settled = Promise.all(results);
    await s.waitFor(settled);
    const got = await settled;
    answered.push(calls.map((c, i) => ({ ...c, answer: facts(got[i]) })));
  }
  if (!linearizable(answered)) {
    // No order explains the answers: show them beside the model's in the order the calls were started.
    const flat = answered.flat();
    expect(flat.map((c) => c.answer)).toEqual(replay(flat));
    expect.fail('the answers match no order of the concurrent calls');
  }
}

let serial = 0;
function concurrencyProperty(make: (clock: ManualClock) => RateLimitStore, numRuns: number) {
  return fc.assert(
    fc.asyncProperty(
      fc.scheduler(),
      fc.array(roundArb, { minLength: 1, maxLength: 8 }),
      async (s, rounds) => {
        const clock = new ManualClock(START);
        const store = make(clock);
        try {
          await checkRounds(store, clock, `cc${process.pid}:${Date.now()}:${serial++}`, rounds, s);
        } finally {
          await store.close();
        }
      },
    ),
    { numRuns },
  );
}

describe('concurrent calls match the sequential model', () => {
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

  it('memory store', async () => {
    await concurrencyProperty((clock) => new MemoryStore({ clock, sweepIntervalMs: 0 }), 150);
  });

  it('Redis store (deny cache and batching on)', async () => {
    await concurrencyProperty((clock) => new RedisStore({ client: redis, clock, timeoutMs: 10_000 }), 60);
  });

  it('Redis store, one call per script call', async () => {
    await concurrencyProperty(
      (clock) => new RedisStore({ client: redis, clock, timeoutMs: 10_000, batch: { maxEntries: 1 } }),
      30,
    );
  });
});
