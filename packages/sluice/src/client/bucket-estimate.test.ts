import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { type Decision, Limiter, ManualClock, type PolicyOptions } from '../core/index.js';
import { formatDecisionHeaders } from '../http/index.js';
import { MemoryStore } from '../memory/index.js';
import { bucketAt, mergeCapacity, observeCapacity } from './bucket-estimate.js';
import { type RateLimitEntry, RateLimitState } from './rate-limit-state.js';
import { readRateLimitHeaders } from './read-rate-limit-headers.js';

const ORIGIN = 'https://api.example.test';

/**
 * A real server side (the engine on a MemoryStore, headers from `sluice/http`) and the client's state on one
 * clock: every header the state reads is what Sluice sends.
 */
function rig(policies: PolicyOptions[]) {
  const clock = new ManualClock(0);
  const limiter = new Limiter({ policies, store: new MemoryStore({ clock, sweepIntervalMs: 0 }), clock });
  const checks = limiter.resolve(policies.map((p) => ({ policy: p.name, key: 'k' })));
  const state = new RateLimitState(clock);
  const send = (): Decision => {
    const d = limiter.decide(checks) as Decision;
    const headers = new Headers(formatDecisionHeaders(d).map(([n, v]) => [n, v] as [string, string]));
    const retryAfter = headers.get('retry-after');
    state.record(
      ORIGIN,
      readRateLimitHeaders(headers, 0),
      retryAfter === null ? undefined : Number(retryAfter),
      d.allowed ? 200 : 429,
    );
    return d;
  };
  const entry = (policy: string) => state.get(ORIGIN, policy) as RateLimitEntry;
  const peek = (policy: string) => limiter.peek([{ policy, key: 'k' }]) as Decision;
  return { clock, limiter, state, send, entry, peek };
}

// The tiers of packages/gateway/examples/rate-limits.yaml: the burst is below the quota in every one.
const STANDARD = { name: 'standard', quota: 300, window: 60, burst: 50 };
const FREE = { name: 'free', quota: 60, window: 60, burst: 10 };
const ENTERPRISE = { name: 'enterprise', quota: 1000, window: 60, burst: 200 };

describe('what the client infers about a token bucket from RateLimit-Policy and RateLimit', () => {
  it('knows the burst of every example tier after one request, without a burst parameter', () => {
    for (const tier of [
      FREE,
      STANDARD,
      ENTERPRISE,
      { name: 'standard.hour', quota: 10_000, window: 3600, burst: 10_000 },
    ]) {
      const r = rig([tier]);
      r.send();
      const e = r.entry(tier.name);
      expect([e.remaining, e.capacity]).toEqual([tier.burst - 1, tier.burst]);
      expect(e.capacityMax).toBeGreaterThanOrEqual(tier.burst);
      expect(bucketAt(e, r.clock.now()).left).toBe(tier.burst - 1);
    }
  });

  it('shows 49 of 50 left after one standard request, and 50 of 50 (not 300) once the bucket is full', () => {
    const r = rig([STANDARD]);
    r.send(); // "standard";q=300;w=60 and "standard";r=49;t=1
    const e = r.entry('standard');
    expect(bucketAt(e, 0)).toEqual({ left: 49, capacity: 50, nextAt: 0, fullAt: 200 });
    // The one missing token is back after 60 / 300 s: the client shows it full then, not after the rounded t.
    expect(e.fullAt).toBe(1000);
    expect(bucketAt(e, 199).left).toBe(49);
    expect(bucketAt(e, 200).left).toBe(50);
    expect(bucketAt(e, 1000)).toEqual({ left: 50, capacity: 50, nextAt: 0, fullAt: 200 });
    expect(bucketAt(e, 60_000).left).toBe(50);
  });

  it('learns a burst above the quota from r and t, and keeps it through a drain and a refill', () => {
    // Sluice accepts a bucket larger than its quota per window: quota 10 per 60 s with bursts of 50.
    const big = { name: 'api', quota: 10, window: 60, burst: 50 };
    const r = rig([big]);
    r.send(); // "api";q=10;w=60 and "api";r=49;t=6
    expect(r.entry('api').capacity).toBe(50);
    expect(bucketAt(r.entry('api'), r.clock.now()).left).toBe(49);
    for (let i = 0; i < 45; i++) r.send();
    const e = r.entry('api');
    expect([e.remaining, e.capacity]).toEqual([4, 50]);
    expect(bucketAt(e, r.clock.now())).toMatchObject({ left: 4, capacity: 50 });
    // An r above q alone, without t, already says the bucket holds more than the quota.
    expect(observeCapacity({ remaining: 44, resetSeconds: undefined, quota: 10, windowSeconds: 60 })).toEqual(
      {
        min: 44,
        max: Number.POSITIVE_INFINITY,
      },
    );
    r.clock.advance(300_000);
    r.send();
    expect([r.entry('api').remaining, r.entry('api').capacity]).toEqual([49, 50]);
  });

  it('when exhausted, knows the next request passes after one refill step and the bucket is full after t', () => {
    const r = rig([STANDARD]);
    for (let i = 0; i < 50; i++) expect(r.send().allowed).toBe(true);
    const denied = r.send();
    expect(denied).toMatchObject({ allowed: false, retryAfterSeconds: 1 });
    const e = r.entry('standard');
    expect([e.remaining, e.resetSeconds, e.capacity, e.capacityMax]).toEqual([0, 10, 50, 50]);
    // One token takes 200 ms at 5 per second: shorter than Retry-After (1 s) and than t (10 s).
    expect(bucketAt(e, 0)).toEqual({ left: 0, capacity: 50, nextAt: 200, fullAt: 10_000 });
    expect(bucketAt(e, 199).left).toBe(0);
    expect(bucketAt(e, 200).left).toBe(1);
    expect(r.peek('standard').allowed).toBe(false);
    r.clock.advance(200);
    expect(r.peek('standard').allowed).toBe(true);
    expect(bucketAt(e, 1000).left).toBe(5);
    expect(bucketAt(e, 9999).left).toBe(49);
    expect(bucketAt(e, 10_000).left).toBe(50);
  });

  it('bounds a wait by Retry-After only for a 429, whose Retry-After is about the bucket', () => {
    const state = new RateLimitState(new ManualClock(0));
    const exhausted = readRateLimitHeaders(
      new Headers({ 'RateLimit-Policy': '"slow";q=1;w=60', RateLimit: '"slow";r=0;t=60' }),
      0,
    );
    state.record(ORIGIN, exhausted, 5, 429);
    expect(state.get(ORIGIN, 'slow')?.nextAt).toBe(5000);
    // A 503 from the upstream carries a Retry-After of its own; the bucket still needs its 60 s.
    state.record(ORIGIN, exhausted, 5, 503);
    expect(state.get(ORIGIN, 'slow')?.nextAt).toBe(60_000);
    expect(state.admitAt(ORIGIN)).toBe(60_000);
  });

  it('notices a reload that lowers the burst: bounds that exclude each other start over', () => {
    const r = rig([STANDARD]);
    r.send();
    expect(r.entry('standard').capacity).toBe(50);
    const lowered = readRateLimitHeaders(
      new Headers({ 'RateLimit-Policy': '"standard";q=300;w=60', RateLimit: '"standard";r=9;t=1' }),
      0,
    );
    r.state.record(ORIGIN, lowered);
    expect([r.entry('standard').capacity, r.entry('standard').capacityMax]).toEqual([10, 14]);
    expect(mergeCapacity({ min: 50, max: 54 }, { min: 10, max: 14 })).toEqual({ min: 10, max: 14 });
    expect(mergeCapacity({ min: 50, max: 54 }, { min: 1, max: 300 })).toEqual({ min: 50, max: 54 });
  });

  it('without a window takes the largest r + 1 seen, unbounded above (a burst may exceed the quota)', () => {
    expect(observeCapacity({ remaining: 49, resetSeconds: 1, quota: 300, windowSeconds: undefined })).toEqual(
      {
        min: 50,
        max: Number.POSITIVE_INFINITY,
      },
    );
    expect(observeCapacity({ remaining: 7, resetSeconds: 0, quota: 300, windowSeconds: 60 })).toEqual({
      min: 7,
      max: 7,
    });
    expect(
      observeCapacity({ remaining: 3, resetSeconds: undefined, quota: undefined, windowSeconds: undefined }),
    ).toEqual({
      min: 3,
      max: Number.POSITIVE_INFINITY,
    });
    expect(
      observeCapacity({ remaining: undefined, resetSeconds: 1, quota: 300, windowSeconds: 60 }),
    ).toBeUndefined();
  });
});

describe('properties of the estimate', () => {
  const policy = fc
    .record({
      quota: fc.integer({ min: 1, max: 2000 }),
      window: fc.constantFrom(1, 10, 60, 90, 3600),
      // Up to four times the quota: Sluice accepts a burst above the quota per window.
      burstShare: fc.double({ min: 0, max: 4, noNaN: true }),
    })
    .map(({ quota, window, burstShare }) => ({
      name: 'p',
      quota,
      window,
      burst: Math.min(2000, Math.max(1, Math.round(quota * burstShare))),
    }));
  const steps = fc.array(
    fc.record({ advanceMs: fc.integer({ min: 0, max: 30_000 }), requests: fc.integer({ min: 0, max: 8 }) }),
    { minLength: 1, maxLength: 12 },
  );

  it('against the real engine: never more left than the bucket holds, a capacity never above the burst, and waits that suffice', () => {
    fc.assert(
      fc.property(
        policy,
        steps,
        fc.array(fc.integer({ min: 0, max: 40_000 }), { maxLength: 6 }),
        (p, plan, probes) => {
          const r = rig([p]);
          for (const step of plan) {
            r.clock.advance(step.advanceMs);
            for (let i = 0; i < step.requests; i++) r.send();
            const e = r.state.get(ORIGIN, 'p');
            if (e === undefined) continue;
            // Probes look ahead without requests (the clock only moves forward); the next step goes on from there.
            const base = r.clock.now();
            for (const offset of [0, ...probes].sort((x, y) => x - y)) {
              const now = base + offset;
              r.clock.advance(now - r.clock.now());
              const v = bucketAt(e, now);
              const truth = r.peek('p');
              expect(v.capacity).toBeLessThanOrEqual(p.burst);
              expect(v.left).toBeLessThanOrEqual(truth.outcomes[0].remaining);
              if (v.nextAt !== undefined && now >= v.nextAt) expect(truth.allowed).toBe(true);
              if (v.fullAt !== undefined && now >= v.fullAt) {
                expect(truth.outcomes[0].remaining).toBeGreaterThanOrEqual(v.capacity as number);
              }
            }
          }
        },
      ),
      { numRuns: 150 },
    );
  });

  it('for any entry, even from a hostile server: left is a whole number from 0 to the capacity, full never before next', () => {
    const optional = <T>(a: fc.Arbitrary<T>) => fc.option(a, { nil: undefined });
    fc.assert(
      fc.property(
        fc.record({
          remaining: optional(fc.integer({ min: 0, max: 1e6 })),
          quota: optional(fc.integer({ min: 0, max: 1e6 })),
          windowSeconds: optional(fc.integer({ min: 1, max: 86_400 })),
          resetSeconds: optional(fc.integer({ min: 0, max: 1e6 })),
          retryAfter: optional(fc.integer({ min: 0, max: 1e5 })),
          status: fc.constantFrom(200, 429, 503),
          known: optional(
            fc.record({ min: fc.integer({ min: 1, max: 1e6 }), max: fc.integer({ min: 1, max: 1e6 }) }),
          ),
        }),
        fc.integer({ min: -1000, max: 1e9 }),
        ({ retryAfter, status, known, ...o }, offset) => {
          const clock = new ManualClock(1_000);
          const state = new RateLimitState(clock);
          if (known !== undefined) {
            const seed = Math.min(known.min, known.max);
            state.record(ORIGIN, [
              {
                policy: 'p',
                remaining: seed - 1,
                quota: o.quota,
                windowSeconds: o.windowSeconds,
                quotaUnit: 'requests',
                resetSeconds: 1,
                form: 'ratelimit',
              },
            ]);
          }
          state.record(
            ORIGIN,
            [{ policy: 'p', ...o, quotaUnit: 'requests', form: 'ratelimit' }],
            retryAfter,
            status,
          );
          const e = state.get(ORIGIN, 'p') as RateLimitEntry;
          const v = bucketAt(e, 1_000 + offset);
          if (o.remaining === undefined && known === undefined) {
            expect(v.left).toBeUndefined();
            return;
          }
          const left = v.left as number;
          expect(Number.isInteger(left)).toBe(true);
          expect(left).toBeGreaterThanOrEqual(0);
          if (v.capacity !== undefined) {
            expect(Number.isInteger(v.capacity)).toBe(true);
            expect(v.capacity).toBeGreaterThanOrEqual(1);
            expect(left).toBeLessThanOrEqual(v.capacity);
          }
          if (v.fullAt !== undefined && v.nextAt !== undefined) {
            expect(v.fullAt).toBeGreaterThanOrEqual(v.nextAt);
          }
          for (const t of [v.nextAt, v.fullAt]) if (t !== undefined) expect(Number.isNaN(t)).toBe(false);
          // Time only adds tokens.
          expect(bucketAt(e, 1_000 + offset + 1234).left as number).toBeGreaterThanOrEqual(left);
        },
      ),
      { numRuns: 500 },
    );
  });
});
