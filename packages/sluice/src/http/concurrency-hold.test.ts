import { describe, expect, it } from 'vitest';
import { type Check, Limiter, ManualClock, type PolicyOptions } from '../core/index.js';
import { MemoryStore } from '../memory/index.js';
import { waitThenSlots } from './concurrency-hold.js';

const RATE: PolicyOptions = {
  name: 'free',
  quota: 60,
  window: 60,
  burst: 2,
  queue: { limit: 5, maxWaitMs: 10_000 },
};
const SLOTS: PolicyOptions = { name: 'free.concurrent', concurrent: 2, retryAfter: 3 };

function setup(policies: PolicyOptions[]) {
  const clock = new ManualClock(0);
  const limiter = new Limiter({ policies, store: new MemoryStore({ clock, sweepIntervalMs: 0 }), clock });
  const checks: Check[] = policies.map((p) => ({ policy: limiter.policy(p.name), key: 'k' }));
  return { clock, limiter, checks };
}

/** Lets every pending microtask and I/O callback run (no time passes on the manual clock). */
const settle = () => new Promise<void>((resolve) => setImmediate(resolve));

describe('waitThenSlots', () => {
  // One rate check gives a SingleDecision, two a ManyDecision: both must come out of the wait as a refusal
  // naming the slot policy, not a TypeError from fields a copy lost.
  for (const extra of [[], [{ name: 'hourly', quota: 100, window: 3600, burst: 100 }]] as PolicyOptions[][]) {
    it(`refuses a request that waited and found no slot, naming the slot policy (${1 + extra.length} rate policies)`, async () => {
      const { clock, limiter, checks } = setup([RATE, ...extra, SLOTS]);
      for (let i = 0; i < 2; i++)
        expect((await waitThenSlots(limiter, checks, 1, undefined)).allowed).toBe(true);
      const waiting = waitThenSlots(limiter, checks, 1, undefined);
      await settle();
      clock.advance(1_000);
      const d = await waiting;
      expect(d).toMatchObject({ allowed: false, reason: 'limited', retryAfterSeconds: 3 });
      expect(d.violated.map((o) => o.policy.name)).toEqual(['free.concurrent']);
      expect(d.outcomes.map((o) => o.policy.name)).toEqual(checks.map((c) => c.policy.name));
      // The token it waited for went back: the rate bucket holds it again.
      expect(d.outcomes[0]).toMatchObject({ limited: false, remaining: 1 });
    });
  }
});
