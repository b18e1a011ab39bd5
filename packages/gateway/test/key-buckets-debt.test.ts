import { type Check, Limiter, ManualClock } from 'sluice';
import { MemoryStore } from 'sluice/memory';
import { describe, expect, it } from 'vitest';
import { bucketsOf } from '../src/gateway/key-buckets.js';
import type { GatewayLimits } from '../src/limits/gateway-limits.js';

/** The admin API's view of one key's buckets, over a real limiter and memory store on a manual clock. */
function setup() {
  const clock = new ManualClock(0);
  const store = new MemoryStore({ clock, sweepIntervalMs: 0 });
  const limiter = new Limiter({
    policies: [
      // 10 tokens every minute, in whole steps.
      { name: 'stepped', refill: { tokens: 10, every: 60 }, burst: 100 },
      { name: 'smooth', quota: 10, window: 60, burst: 100 },
    ],
    store,
    clock,
  });
  const checks: Check[] = [
    { policy: limiter.policy('stepped'), key: 'k' },
    { policy: limiter.policy('smooth'), key: 'k' },
  ];
  // Only what bucketsOf reads of the gateway's limits: the key's checks and the limiter that peeks at them.
  const plan = { limiter, allChecks: () => checks } as unknown as GatewayLimits;
  const charge = (tokens: number) => {
    limiter.check('stepped', 'k', 1);
    limiter.check('smooth', 'k', 1);
    store.settle(checks, tokens - 1);
  };
  const view = async () => Object.fromEntries((await bucketsOf(plan, 'k')).map((b) => [b.policy, b]));
  return { clock, charge, view };
}

describe('GET /keys/<key>: the debt of a bucket', () => {
  it('shows the debt of a stepped bucket, to within one step of refill, as it shows a continuous one', async () => {
    const t = setup();
    t.charge(150);
    let v = await t.view();
    expect(v.smooth.remaining).toBe(0);
    expect(v.smooth.debt).toBe(50);
    expect(v.stepped.remaining).toBe(0);
    expect(v.stepped.debt).toBe(50);
    // A debt that is no whole number of steps is told at most one step (10 tokens) above it.
    const u = setup();
    u.charge(145);
    v = await u.view();
    expect(v.stepped.debt).toBeGreaterThanOrEqual(45);
    expect(v.stepped.debt).toBeLessThan(45 + 10);
    // Partway through a step the debt is told the same; once the steps have paid it back, none is shown.
    u.clock.advance(30_000);
    expect((await u.view()).stepped.debt).toBe(v.stepped.debt);
    // Four steps in, 5 are owed.
    u.clock.advance(30_000 + 3 * 60_000);
    v = await u.view();
    expect(v.stepped.debt).toBeGreaterThanOrEqual(5);
    expect(v.stepped.debt).toBeLessThan(5 + 10);
    u.clock.advance(60_000);
    v = await u.view();
    expect(v.stepped.debt).toBeUndefined();
    expect(v.stepped.remaining).toBe(5);
  });

  it('shows no debt for a stepped bucket that owes nothing', async () => {
    const t = setup();
    t.charge(95);
    const v = await t.view();
    expect(v.stepped.remaining).toBe(5);
    expect(v.stepped.debt).toBeUndefined();
  });
});
