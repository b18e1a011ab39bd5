import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { type Check, definePolicy, type ManualClock, type RateLimitStore } from '../core/index.js';
import { expectWellFormedDecision } from './decision-shape.js';
import { SteppedModel } from './stepped-model.js';

/** What the stepped cases need from the suite around them. */
export interface SteppedSuite {
  /** A fresh store on a fresh clock. */
  readonly setup: () => Promise<{ clock: ManualClock; store: RateLimitStore }>;
  /** A key no other test uses. */
  readonly freshKey: (label: string) => string;
  /** Runs of each property. */
  readonly propertyRuns: number;
}

/**
 * The stepped-refill part of the store contract (`refill: { tokens, every }`): fixed cases from the Policy
 * Engine's limiter (5 tokens every 10 s, burst 50) and properties against {@link SteppedModel}.
 *
 * @param suite - the surrounding suite's setup, key maker and property runs.
 */
export function steppedConformance(suite: SteppedSuite): void {
  const { setup, freshKey } = suite;
  const engine = definePolicy({ name: 'rl.engine', burst: 50, refill: { tokens: 5, every: 10 } });
  const small = definePolicy({ name: 'rl.steps', burst: 4, refill: { tokens: 3, every: 7 } });

  describe('stepped refill', () => {
    it('5 tokens every 10 s, burst 50: r = 49 and t = 10 after one request', async () => {
      const { store } = await setup();
      const d = await store.decide([{ policy: engine, key: freshKey('s1') }], 1);
      expect(d.outcomes[0]).toMatchObject({ remaining: 49, resetSeconds: 10, limited: false });
    });

    it('admits burst, then only whole steps, with Retry-After at the next step', async () => {
      const { store, clock } = await setup();
      const c = [{ policy: engine, key: freshKey('s2') }];
      for (let i = 0; i < 50; i++) expect((await store.decide(c, 1)).allowed).toBe(true);
      let d = await store.decide(c, 1);
      expect(d).toMatchObject({ allowed: false, reason: 'limited', retryAfterSeconds: 10 });
      expect(d.outcomes[0]).toMatchObject({ remaining: 0, resetSeconds: 100 });
      clock.advance(9_999); // nothing refilled yet: a continuous bucket would hold 4.9995 tokens
      d = await store.decide(c, 1);
      expect(d).toMatchObject({ allowed: false, retryAfterSeconds: 1 });
      expect(d.outcomes[0]).toMatchObject({ remaining: 0, resetSeconds: 91 });
      clock.advance(1);
      for (let i = 0; i < 5; i++) expect((await store.decide(c, 1)).allowed).toBe(true);
      d = await store.decide(c, 1);
      expect(d).toMatchObject({ allowed: false, retryAfterSeconds: 10 });
      clock.advance(25_000); // two more steps, 5 s into the third
      d = await store.decide(c, 6);
      expect(d.outcomes[0]).toMatchObject({ remaining: 4, resetSeconds: 95 });
      d = await store.decide(c, 5);
      expect(d).toMatchObject({ allowed: false, retryAfterSeconds: 5 });
      expect(d.outcomes[0].remaining).toBe(4);
    });

    it('counts steps from the take that left the bucket short of full', async () => {
      const { store, clock } = await setup();
      const c = [{ policy: small, key: freshKey('s3') }];
      await store.decide(c, 2); // t = 0 s, 2 left: full again at 7 s
      clock.advance(7_000);
      expect((await store.peek(c, 1)).outcomes[0]).toMatchObject({ remaining: 4, resetSeconds: 0 });
      clock.advance(4_000); // full since 7 s; the next take starts a new timeline at 11 s
      let d = await store.decide(c, 4);
      expect(d.outcomes[0]).toMatchObject({ remaining: 0, resetSeconds: 14 });
      clock.advance(6_999);
      d = await store.decide(c, 1);
      expect(d).toMatchObject({ allowed: false, retryAfterSeconds: 1 });
      clock.advance(1);
      d = await store.decide(c, 3);
      expect(d.outcomes[0]).toMatchObject({ remaining: 0, resetSeconds: 14 });
    });

    it('refunds and peeks without moving the timeline', async () => {
      const { store, clock } = await setup();
      const c = [{ policy: engine, key: freshKey('s4') }];
      await store.decide(c, 20);
      clock.advance(3_000);
      await store.refund(c, 2);
      const d = await store.peek(c, 1);
      expect(d.outcomes[0]).toMatchObject({ remaining: 32, resetSeconds: 37 });
      await store.refund(c, 100);
      expect((await store.peek(c, 1)).outcomes[0]).toMatchObject({ remaining: 50, resetSeconds: 0 });
    });

    it('reserves debt that whole steps pay back', async () => {
      const { store, clock } = await setup();
      const queued = definePolicy({
        name: 'rl.steps.queued',
        burst: 2,
        refill: { tokens: 1, every: 5 },
        queue: { limit: 3, maxWaitMs: 12_000 },
      });
      const c = [{ policy: queued, key: freshKey('s5') }];
      expect((await store.reserve(c, 2)).delayMs).toBe(0);
      clock.advance(1_000);
      expect(await store.reserve(c, 2)).toMatchObject({ allowed: true, delayMs: 9_000 });
      expect((await store.reserve(c, 1)).allowed).toBe(false); // 14 s > 12 s
      expect((await store.decide(c, 1)).allowed).toBe(false);
    });

    it('decides stepped and continuous policies all or nothing', async () => {
      const { store } = await setup();
      const minute = definePolicy({ name: 'rl.minute', quota: 60, window: 60, burst: 100 });
      const key = freshKey('s6');
      const both: Check[] = [
        { policy: small, key },
        { policy: minute, key },
      ];
      for (let i = 0; i < 4; i++) expect((await store.decide(both, 1)).allowed).toBe(true);
      const d = await store.decide(both, 1);
      expect(d.allowed).toBe(false);
      expect(d.retryAfterSeconds).toBe(7);
      expect(d.outcomes[0]).toMatchObject({ remaining: 0, resetSeconds: 14, limited: true });
      expect(d.outcomes[1]).toMatchObject({ remaining: 96, resetSeconds: 4, limited: false });
    });

    const advance = fc.oneof(
      fc.constant(0),
      fc.integer({ min: 1, max: 3_000 }),
      fc.integer({ min: 0, max: 40_000 }),
      fc.constantFrom(7_000, 10_000, 20_000),
    );
    const op = fc.record({
      advance,
      cost: fc.oneof(fc.constant(1), fc.integer({ min: 1, max: 6 }), fc.constant(60)),
      kind: fc.constantFrom('decide', 'decide', 'decide', 'peek', 'refund'),
      which: fc.constantFrom(0, 1),
    });

    it('gives r, t and Retry-After of the whole-token model for every sequence', async () => {
      await fc.assert(
        fc.asyncProperty(fc.array(op, { minLength: 1, maxLength: 40 }), async (ops) => {
          const { store, clock } = await setup();
          const key = freshKey('smodel');
          const policies = [engine, small];
          const models = policies.map((p) => new SteppedModel(p));
          for (const o of ops) {
            clock.advance(o.advance);
            const now = Math.floor(clock.now());
            const m = models[o.which];
            const checks = [{ policy: policies[o.which], key }];
            if (o.kind === 'refund') {
              await store.refund(checks, o.cost);
              m.refund(now, o.cost);
              continue;
            }
            const holds = m.holds(now, o.cost);
            const d =
              o.kind === 'peek' ? await store.peek(checks, o.cost) : await store.decide(checks, o.cost);
            expectWellFormedDecision(d, o.cost);
            expect(d.allowed).toBe(holds);
            if (holds && o.kind === 'decide') m.take(now, o.cost);
            expect(d.outcomes[0].remaining).toBe(m.remaining());
            expect(d.outcomes[0].resetSeconds).toBe(m.resetSeconds(now));
            expect(d.retryAfterSeconds).toBe(holds ? 0 : m.retryAfterSeconds(now, o.cost));
          }
        }),
        { numRuns: suite.propertyRuns },
      );
    });

    it('never admits more than burst + tokens x floor(elapsed / every), nor denies while the bucket holds the cost', async () => {
      await fc.assert(
        fc.asyncProperty(
          fc.array(fc.record({ advance, cost: fc.integer({ min: 1, max: 6 }) }), {
            minLength: 1,
            maxLength: 60,
          }),
          async (ops) => {
            const { store, clock } = await setup();
            const c = [{ policy: small, key: freshKey('sbound') }];
            const model = new SteppedModel(small);
            const start = Math.floor(clock.now());
            let admitted = 0;
            for (const o of ops) {
              clock.advance(o.advance);
              const now = Math.floor(clock.now());
              const holds = model.holds(now, o.cost);
              const d = await store.decide(c, o.cost);
              if (holds) expect(d.allowed).toBe(true);
              if (d.allowed) {
                model.take(now, o.cost);
                admitted += o.cost;
              }
              const steps = Math.floor((now - start) / small.stepMs);
              expect(admitted).toBeLessThanOrEqual(small.burst + 3 * steps);
            }
          },
        ),
        { numRuns: suite.propertyRuns },
      );
    });
  });
}
