import fc from 'fast-check';
import { afterEach, describe, expect, it } from 'vitest';
import {
  type Check,
  type Decision,
  definePolicy,
  ManualClock,
  overridePolicy,
  type Policy,
  type RateLimitStore,
} from '../core/index.js';
import { expectWellFormedDecision } from './decision-shape.js';
import { ReferenceStore } from './reference-store.js';
import { steppedConformance } from './stepped-conformance.js';

/** Builds a fresh store on the given clock; remote stores take the clock instead of their server time in tests. */
export type StoreFactory = (clock: ManualClock) => RateLimitStore | Promise<RateLimitStore>;

/** Options of {@link storeConformance}. */
export interface ConformanceOptions {
  /** Runs of the model-based property test; default 40 (remote stores may lower it to keep the suite fast). */
  readonly propertyRuns?: number;
}

const START = 1_700_000_000_000;
let counter = 0;
/** A key no other test uses, so a shared remote server needs no flush between tests. */
const freshKey = (label: string) => `${label}:${process.pid}:${Date.now()}:${counter++}`;

/** Strips a decision to the facts that headers and callers see, for equality across stores. */
function facts(d: Decision) {
  return {
    allowed: d.allowed,
    reason: d.reason,
    retryAfterSeconds: d.retryAfterSeconds,
    delayMs: d.delayMs,
    outcomes: d.outcomes.map((o) => ({
      policy: o.policy.name,
      limited: o.limited,
      remaining: o.remaining,
      resetSeconds: o.resetSeconds,
      retryAfterSeconds: o.retryAfterSeconds,
    })),
    violated: d.violated.map((o) => o.policy.name),
  };
}

/**
 * The contract of a {@link RateLimitStore}, as a Vitest suite. Every store must pass it; it compares the store
 * with {@link ReferenceStore}, the oracle, over fixed cases from the design ticket and random sequences.
 *
 * @param name - the suite's title, for example `memory` or `redis (cluster)`.
 * @param make - builds a fresh store on a {@link ManualClock}.
 * @param options - see {@link ConformanceOptions}.
 *
 * @example
 * ```ts
 * storeConformance('memory', (clock) => new MemoryStore({ clock, sweepIntervalMs: 0 }));
 * ```
 */
export function storeConformance(name: string, make: StoreFactory, options: ConformanceOptions = {}): void {
  describe(`store conformance: ${name}`, () => {
    const open: RateLimitStore[] = [];
    afterEach(async () => {
      for (const s of open.splice(0)) await s.close();
    });
    async function setup() {
      const clock = new ManualClock(START);
      const store = await make(clock);
      open.push(store);
      return { clock, store };
    }
    const write = definePolicy({ name: 'rl.write', quota: 120, window: 60, burst: 30 });
    const read = definePolicy({ name: 'rl.read', quota: 600, window: 60, burst: 100 });
    const odd = definePolicy({ name: 'rl.odd', quota: 7, window: 60, burst: 3 });
    const stepped = definePolicy({ name: 'rl.stepped', burst: 5, refill: { tokens: 2, every: 3 } });

    it('starts full: one request leaves r = burst - 1 and t = 1 (120 per minute, burst 30)', async () => {
      const { store } = await setup();
      const d = await store.decide([{ policy: write, key: freshKey('a') }], 1);
      expect(d.allowed).toBe(true);
      expect(d.outcomes[0]).toMatchObject({ remaining: 29, resetSeconds: 1, limited: false });
    });

    it('admits exactly burst at a frozen clock, then denies with Retry-After = ceil(60 / per_minute)', async () => {
      for (const policy of [write, odd]) {
        const { store } = await setup();
        const key = freshKey('burst');
        for (let i = 0; i < policy.burst; i++) {
          expect((await store.decide([{ policy, key }], 1)).allowed).toBe(true);
        }
        const d = await store.decide([{ policy, key }], 1);
        expect(d.allowed).toBe(false);
        expect(d.reason).toBe('limited');
        expect(d.retryAfterSeconds).toBe(Math.ceil(60 / policy.quota));
        expect(d.violated.map((o) => o.policy.name)).toEqual([policy.name]);
        expect(d.outcomes[0].remaining).toBe(0);
      }
    });

    it('refills at q / w tokens per second and never above burst', async () => {
      const { store, clock } = await setup();
      const key = freshKey('refill');
      const c = [{ policy: write, key }];
      for (let i = 0; i < 30; i++) await store.decide(c, 1);
      clock.advance(500); // one token at 2 per second
      expect((await store.decide(c, 1)).allowed).toBe(true);
      expect((await store.decide(c, 1)).allowed).toBe(false);
      clock.advance(3_600_000);
      const d = await store.peek(c, 1);
      expect(d.outcomes[0]).toMatchObject({ remaining: 30, resetSeconds: 0 });
    });

    it('rounds r down and t up', async () => {
      const { store, clock } = await setup();
      const key = freshKey('round');
      const c = [{ policy: odd, key }];
      await store.decide(c, 1);
      await store.decide(c, 1);
      await store.decide(c, 1); // empty: 7 per minute refills one token in 8.571 s
      clock.advance(4_000); // 0.4666 tokens
      const d = await store.peek(c, 1);
      expect(d.allowed).toBe(false);
      expect(d.outcomes[0].remaining).toBe(0);
      // (3 - 0.4666) / (7 / 60) = 21.71 s -> 22
      expect(d.outcomes[0].resetSeconds).toBe(22);
      // (1 - 0.4666) / (7 / 60) = 4.57 s -> 5
      expect(d.retryAfterSeconds).toBe(5);
    });

    it('decides several policies all or nothing', async () => {
      const { store } = await setup();
      const key = freshKey('aon');
      const both: Check[] = [
        { policy: odd, key },
        { policy: read, key },
      ];
      for (let i = 0; i < 3; i++) expect((await store.decide(both, 1)).allowed).toBe(true);
      const denied = await store.decide(both, 1);
      expect(denied.allowed).toBe(false);
      expect(denied.violated.map((o) => o.policy.name)).toEqual(['rl.odd']);
      // rl.read gave nothing for the denied request: 100 - 3 = 97 left.
      expect(denied.outcomes[1]).toMatchObject({ limited: false, remaining: 97 });
    });

    it('keeps keys of different policies apart', async () => {
      const { store } = await setup();
      const key = freshKey('apart');
      for (let i = 0; i < 3; i++) await store.decide([{ policy: odd, key }], 1);
      expect((await store.decide([{ policy: odd, key }], 1)).allowed).toBe(false);
      const other = await store.decide([{ policy: write, key }], 1);
      expect(other.allowed).toBe(true);
      expect(other.outcomes[0].remaining).toBe(29);
    });

    it('gives an override policy buckets of its own, even with the sizes of its base', async () => {
      const { store } = await setup();
      const key = freshKey('override');
      for (let i = 0; i < 3; i++) await store.decide([{ policy: odd, key }], 1);
      expect((await store.decide([{ policy: odd, key }], 1)).allowed).toBe(false);
      // An override starts full and leaves the base's buckets as they were when it ends.
      const same = overridePolicy(odd, { quota: odd.quota, window: odd.window, burst: odd.burst });
      const d = await store.decide([{ policy: same, key }], 1);
      expect([d.allowed, d.outcomes[0].remaining]).toEqual([true, 2]);
      expect((await store.decide([{ policy: odd, key }], 1)).allowed).toBe(false);
    });

    it('takes cost tokens and denies a cost above burst with its own reason', async () => {
      const { store } = await setup();
      const key = freshKey('cost');
      const d = await store.decide([{ policy: write, key }], 10);
      expect(d.outcomes[0].remaining).toBe(20);
      const big = await store.decide([{ policy: write, key }], 31);
      expect(big.allowed).toBe(false);
      expect(big.reason).toBe('cost_exceeds_burst');
      expect((await store.peek([{ policy: write, key }], 1)).outcomes[0].remaining).toBe(20);
    });

    it('never denies for a shadow policy, and takes nothing from it when it would have', async () => {
      const { store } = await setup();
      const shadow = definePolicy({ name: 'rl.shadow', quota: 60, window: 60, burst: 1, shadow: true });
      const key = freshKey('shadow');
      const c: Check[] = [
        { policy: shadow, key },
        { policy: write, key },
      ];
      expect((await store.decide(c, 1)).allowed).toBe(true);
      const d = await store.decide(c, 1);
      expect(d.allowed).toBe(true);
      expect(d.outcomes[0].limited).toBe(true);
      expect(d.violated).toEqual([]);
      expect(d.outcomes[1].remaining).toBe(28);
    });

    it('peeks without taking, refunds up to burst, resets to full', async () => {
      const { store } = await setup();
      const key = freshKey('prr');
      const c = [{ policy: write, key }];
      await store.decide(c, 5);
      expect((await store.peek(c, 1)).outcomes[0].remaining).toBe(25);
      expect((await store.peek(c, 1)).outcomes[0].remaining).toBe(25);
      await store.refund(c, 2);
      expect((await store.peek(c, 1)).outcomes[0].remaining).toBe(27);
      await store.refund(c, 100);
      expect((await store.peek(c, 1)).outcomes[0]).toMatchObject({ remaining: 30, resetSeconds: 0 });
      await store.decide(c, 30);
      await store.reset(c);
      expect((await store.peek(c, 1)).outcomes[0].remaining).toBe(30);
    });

    it('holds concurrency slots: all or nothing with a rate policy, never refilled by time, released up to N', async () => {
      const { clock, store } = await setup();
      const slots = definePolicy({ name: 'rl.slots', concurrent: 4, retryAfter: 3 });
      const key = freshKey('slots');
      const both = [
        { policy: odd, key },
        { policy: slots, key },
      ];
      const c = [{ policy: slots, key }];
      expect((await store.decide(both, 3)).allowed).toBe(true);
      // The rate policy is empty: refused, and the slot it would have taken stays free.
      expect((await store.decide(both, 1)).violated.map((o) => o.policy.name)).toEqual(['rl.odd']);
      expect((await store.peek(c, 1)).outcomes[0]).toMatchObject({ remaining: 1, resetSeconds: 0 });
      expect((await store.decide(c, 1)).allowed).toBe(true);
      // Time gives no slot back (4 s: within the Redis store's default lease, which a holder that stops renewing
      // for longer loses, D-G108).
      clock.advance(4_000);
      const d = await store.decide(c, 1);
      expect(d.allowed).toBe(false);
      expect(d.retryAfterSeconds).toBe(3);
      await store.refund(c, 1);
      expect((await store.decide(c, 1)).allowed).toBe(true);
      await store.refund(c, 9);
      expect((await store.peek(c, 1)).outcomes[0].remaining).toBe(4);
      await store.decide(c, 4);
      await store.reset(c);
      expect((await store.peek(c, 1)).outcomes[0].remaining).toBe(4);
    });

    it('reserves within queue bounds and refuses beyond them', async () => {
      const { store } = await setup();
      const queued = definePolicy({
        name: 'rl.queued',
        quota: 60,
        window: 60,
        burst: 2,
        queue: { limit: 2, maxWaitMs: 1500 },
      });
      const key = freshKey('queue');
      const c = [{ policy: queued, key }];
      expect((await store.reserve(c, 1)).delayMs).toBe(0);
      expect((await store.reserve(c, 1)).delayMs).toBe(0);
      const first = await store.reserve(c, 1);
      expect(first).toMatchObject({ allowed: true, delayMs: 1000 });
      const second = await store.reserve(c, 1); // would wait 2000 ms > 1500
      expect(second.allowed).toBe(false);
      // A plain decide never jumps the queue.
      expect((await store.decide(c, 1)).allowed).toBe(false);
    });

    it('clamps time that goes backwards', async () => {
      const { store, clock } = await setup();
      const key = freshKey('back');
      const c = [{ policy: write, key }];
      for (let i = 0; i < 30; i++) await store.decide(c, 1);
      clock.set(START - 3_600_000);
      expect((await store.decide(c, 1)).allowed).toBe(false);
      clock.set(START + 500);
      expect((await store.decide(c, 1)).allowed).toBe(true);
    });

    it('decides every random sequence exactly as the reference model', async () => {
      const policies: Policy[] = [write, odd, read, stepped];
      const op = fc.record({
        advance: fc.oneof(
          fc.constant(0),
          fc.integer({ min: 1, max: 2000 }),
          fc.integer({ min: 0, max: 120_000 }),
        ),
        cost: fc.oneof(fc.constant(1), fc.integer({ min: 1, max: 8 }), fc.constant(40)),
        which: fc.subarray([0, 1, 2, 3], { minLength: 1 }),
        kind: fc.constantFrom('decide', 'decide', 'decide', 'peek', 'refund'),
      });
      await fc.assert(
        fc.asyncProperty(fc.array(op, { minLength: 1, maxLength: 40 }), async (ops) => {
          const { store, clock } = await setup();
          const oracle = new ReferenceStore(clock);
          const key = freshKey('model');
          for (const o of ops) {
            clock.advance(o.advance);
            const checks = o.which.map((i) => ({ policy: policies[i], key }));
            if (o.kind === 'refund') {
              await store.refund(checks, o.cost);
              oracle.refund(checks, o.cost);
              continue;
            }
            const got =
              o.kind === 'peek' ? await store.peek(checks, o.cost) : await store.decide(checks, o.cost);
            const want = o.kind === 'peek' ? oracle.peek(checks, o.cost) : oracle.decide(checks, o.cost);
            expectWellFormedDecision(got, o.cost);
            expect(facts(got)).toEqual(facts(want));
          }
        }),
        { numRuns: options.propertyRuns ?? 40 },
      );
    });

    steppedConformance({ setup, freshKey, propertyRuns: options.propertyRuns ?? 40 });
  });
}
