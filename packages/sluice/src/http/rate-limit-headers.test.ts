import fc from 'fast-check';
import { parseItem, parseList } from 'structured-headers';
import { describe, expect, it } from 'vitest';
import { type Decision, definePolicy, Limiter, ManualClock } from '../core/index.js';
import { MemoryStore } from '../memory/index.js';
import { createHttpLimiter } from './http-limiter.js';
import {
  formatDecisionHeaders,
  formatRateLimit,
  formatRateLimitPolicy,
  HeaderPlan,
  legacyRateLimitHeaders,
  mostRestrictive,
} from './rate-limit-headers.js';

function engine(policies: Parameters<typeof definePolicy>[0][]) {
  const clock = new ManualClock(0);
  const limiter = new Limiter({ policies, store: new MemoryStore({ clock, sweepIntervalMs: 0 }) });
  return { clock, limiter };
}

describe('draft-11 header strings', () => {
  it('formats policy and state exactly (defaults: 120 per minute, burst 30)', () => {
    const { limiter } = engine([{ name: 'rl.write', quota: 120, window: 60, burst: 30 }]);
    const d = limiter.check('rl.write', 'user:1') as Decision;
    expect(formatRateLimitPolicy(limiter.policies)).toBe('"rl.write";q=120;w=60');
    expect(formatRateLimit(d.outcomes)).toBe('"rl.write";r=29;t=1');
    expect(new HeaderPlan(limiter.policies).state(d.outcomes)).toBe('"rl.write";r=29;t=1');
  });

  it('rounds r down and t up', () => {
    // 1 token per 7 s, burst 3: after 3 requests and 10 s, 1.43 tokens: r = 1, t = ceil(1.57 x 7) = 11.
    const { clock, limiter } = engine([{ name: 'slow', quota: 60, window: 420, burst: 3 }]);
    for (let i = 0; i < 3; i++) limiter.check('slow', 'k');
    clock.advance(10_000);
    const d = limiter.peek([{ policy: 'slow', key: 'k' }]) as Decision;
    expect(formatRateLimit(d.outcomes)).toBe('"slow";r=1;t=11');
  });

  it('lists one item per enforcing policy and leaves shadow policies out', () => {
    const { limiter } = engine([
      { name: 'burst', quota: 100, window: 60 },
      { name: 'daily', quota: 1000, window: 86400 },
      { name: 'trial', quota: 1, window: 60, shadow: true },
    ]);
    const d = limiter.decide([
      { policy: 'burst', key: 'a' },
      { policy: 'trial', key: 'a' },
      { policy: 'daily', key: 'a' },
    ]) as Decision;
    const plan = new HeaderPlan(d.outcomes.map((o) => o.policy));
    expect(plan.policyValue).toBe('"burst";q=100;w=60, "daily";q=1000;w=86400');
    expect(plan.state(d.outcomes)).toBe('"burst";r=99;t=1, "daily";r=999;t=87');
    expect(plan.state(d.outcomes)).toBe(formatRateLimit(d.outcomes));
  });

  it('escapes quotes and backslashes in policy names through the library', () => {
    const p = definePolicy({ name: 'a"b\\c', quota: 1, window: 1 });
    expect(formatRateLimitPolicy([p])).toBe('"a\\"b\\\\c";q=1;w=1');
  });

  it('never sends an empty legacy policy name', () => {
    expect(
      legacyRateLimitHeaders(
        {
          allowed: true,
          reason: 'allowed',
          cost: 1,
          retryAfterSeconds: 0,
          delayMs: 0,
          violated: [],
          outcomes: [
            {
              policy: definePolicy({ name: ' ', quota: 1, window: 1 }),
              key: 'k',
              limited: false,
              remaining: 0,
              resetSeconds: 1,
              retryAfterSeconds: 0,
            },
          ],
        },
        0,
      )[3],
    ).toEqual(['X-RateLimit-Policy', '?']);
  });

  it('adds a partition key as a byte sequence', () => {
    const p = definePolicy({ name: 'x', quota: 1, window: 1 });
    expect(formatRateLimitPolicy([p], { partitionKeys: [new Uint8Array([1, 2, 3])] })).toBe(
      '"x";q=1;w=1;pk=:AQID:',
    );
  });
});

describe('legacy headers and Retry-After', () => {
  it('describe the most restrictive policy with epoch reset', () => {
    const { limiter } = engine([
      { name: 'free', quota: 60, window: 60, burst: 10 },
      { name: 'hourly', quota: 1000, window: 3600, burst: 1000 },
    ]);
    const d = limiter.decide([
      { policy: 'free', key: 'k' },
      { policy: 'hourly', key: 'k' },
    ]) as Decision;
    expect(mostRestrictive(d)?.policy.name).toBe('free');
    expect(legacyRateLimitHeaders(d, 1_701_935_999_500)).toEqual([
      ['X-RateLimit-Limit', '60'],
      ['X-RateLimit-Remaining', '9'],
      ['X-RateLimit-Reset', '1701936001'],
      ['X-RateLimit-Policy', 'free'],
    ]);
  });

  it('sends Retry-After = ceil(60 / per_minute) after the burst, only on a denial', () => {
    const { limiter } = engine([{ name: 'rl.read', quota: 40, window: 60, burst: 2 }]);
    const allowed = limiter.check('rl.read', 'k') as Decision;
    expect(formatDecisionHeaders(allowed).map(([n]) => n)).toEqual(['RateLimit-Policy', 'RateLimit']);
    limiter.check('rl.read', 'k');
    const denied = limiter.check('rl.read', 'k') as Decision;
    expect(formatDecisionHeaders(denied, { mode: 'none' })).toEqual([
      ['Retry-After', String(Math.ceil(60 / 40))],
    ]);
    expect(formatDecisionHeaders(denied, { mode: 'legacy', nowMs: 0 }).map(([n]) => n)).toEqual([
      'X-RateLimit-Limit',
      'X-RateLimit-Remaining',
      'X-RateLimit-Reset',
      'X-RateLimit-Policy',
      'Retry-After',
    ]);
  });
});

describe('decisions the store could not make', () => {
  it('announce the policies but no levels', () => {
    const p = definePolicy({ name: 'rl.read', quota: 60, window: 60 });
    const outcome = {
      policy: p,
      key: 'k',
      limited: false,
      remaining: 0,
      resetSeconds: 0,
      retryAfterSeconds: 0,
    };
    const base = { cost: 1, delayMs: 0, outcomes: [outcome], violated: [] };
    expect(
      formatDecisionHeaders(
        { ...base, allowed: false, reason: 'store_unavailable', retryAfterSeconds: 2 },
        { mode: 'both' },
      ),
    ).toEqual([
      ['RateLimit-Policy', '"rl.read";q=60;w=60'],
      ['Retry-After', '2'],
    ]);
    expect(
      formatDecisionHeaders({
        ...base,
        allowed: true,
        reason: 'store_unavailable_open',
        retryAfterSeconds: 0,
      }),
    ).toEqual([['RateLimit-Policy', '"rl.read";q=60;w=60']]);
  });
});

/** A header value must be visible ASCII or spaces and tabs (RFC 9110 field-value), never CR, LF or NUL. */
const FIELD_VALUE = /^[\x21-\x7e]([\x20-\x7e\t]*[\x21-\x7e])?$/;

describe('property: no header value is ever malformed', () => {
  // Any name the HTTP limiter accepts: printable ASCII without outer spaces (others are rejected at construction).
  const name = fc
    .string({
      unit: fc.integer({ min: 0x20, max: 0x7e }).map((c) => String.fromCharCode(c)),
      minLength: 1,
      maxLength: 12,
    })
    .filter((n) => n.trim() === n);
  const policy = fc.record({
    name,
    quota: fc.integer({ min: 1, max: 1_000_000 }),
    window: fc.integer({ min: 1, max: 86_400 * 30 }),
    burst: fc.integer({ min: 1, max: 1_000_000 }),
    shadow: fc.boolean(),
  });
  it('for any policies, steps and modes, every value parses and round-trips', () => {
    fc.assert(
      fc.property(
        fc.uniqueArray(policy, { minLength: 1, maxLength: 4, selector: (p) => p.name }),
        fc.array(
          fc.record({
            advanceMs: fc.integer({ min: 0, max: 10_000_000 }),
            cost: fc.integer({ min: 1, max: 50 }),
          }),
          {
            minLength: 1,
            maxLength: 12,
          },
        ),
        fc.constantFrom('draft-11', 'legacy', 'both', 'none' as const),
        fc.boolean(),
        (policies, steps, mode, pk) => {
          const { clock, limiter } = engine(policies);
          const http = createHttpLimiter({
            limiter,
            rules: [{ policies: policies.map((p) => p.name), key: 'principal' }],
            headers: mode,
            partitionKey: pk,
            wallClock: () => 1_700_000_000_000 + clock.now(),
          });
          for (const step of steps) {
            clock.advance(step.advanceMs);
            const v = http.evaluate({
              method: 'POST',
              path: '/x',
              headers: {},
              remoteAddress: '192.0.2.1',
              identity: { principal: 'p' },
              cost: step.cost,
            });
            if (v instanceof Promise) throw new Error('memory store is synchronous');
            for (const [h, value] of v.headers) {
              expect(value).toMatch(FIELD_VALUE);
              const lower = h.toLowerCase();
              if (lower === 'ratelimit' || lower === 'ratelimit-policy') {
                const list = parseList(value);
                const enforcing = policies.filter((p) => !p.shadow);
                expect(list.map(([item]) => item)).toEqual(enforcing.map((p) => p.name));
                for (const [, params] of list) {
                  for (const [k, n] of params) {
                    if (k === 'pk') expect(n).toBeInstanceOf(ArrayBuffer);
                    else expect(Number.isInteger(n) && (n as number) >= 0).toBe(true);
                  }
                }
              } else if (lower === 'retry-after') {
                expect(value).toMatch(/^[1-9]\d*$/);
              } else if (lower.startsWith('x-ratelimit-') && lower !== 'x-ratelimit-policy') {
                expect(value).toMatch(/^\d+$/);
              }
            }
            if (v.body !== undefined) expect(() => JSON.parse(v.body as string)).not.toThrow();
          }
        },
      ),
      { numRuns: 200 },
    );
  });

  it('the precomputed plan equals the library serialization for any outcome', () => {
    fc.assert(
      fc.property(name, fc.nat(), fc.nat(), (n, r, t) => {
        const p = definePolicy({ name: n, quota: 1, window: 1 });
        const outcome = {
          policy: p,
          key: 'k',
          limited: false,
          remaining: r,
          resetSeconds: t,
          retryAfterSeconds: 0,
        };
        const fast = new HeaderPlan([p]).state([outcome]);
        expect(fast).toBe(formatRateLimit([outcome]));
        expect(parseItem(fast)[1].get('r')).toBe(Math.min(r, 999_999_999_999_999));
      }),
    );
  });

  it("the one-policy pair equals the plan's state in any sequence, and is shared while r and t repeat", () => {
    // One plan per policy for the whole run: its cache of the last pair sees every sequence of values.
    const rate = definePolicy({ name: 'rate', quota: 5, window: 60 });
    const slots = definePolicy({ name: 'slots', concurrent: 2 });
    const plans = [new HeaderPlan([rate]), new HeaderPlan([slots])];
    fc.assert(
      fc.property(
        fc.array(fc.record({ which: fc.constantFrom(0, 1), r: fc.nat(3), t: fc.nat(3) }), { maxLength: 20 }),
        (steps) => {
          let last: { which: number; r: number; t: number; pair: readonly [string, string] } | undefined;
          for (const s of steps) {
            const policy = s.which === 0 ? rate : slots;
            const outcome = {
              policy,
              key: 'k',
              limited: true,
              remaining: s.r,
              resetSeconds: s.t,
              retryAfterSeconds: 1,
            };
            const pair = plans[s.which].onePair(policy, s.r, s.t);
            expect(pair).toEqual(['RateLimit', plans[s.which].state([outcome])]);
            if (last !== undefined && last.which === s.which && last.r === s.r && last.t === s.t) {
              // The repeat is one frozen pair: a caller cannot change what later verdicts send.
              expect(Object.isFrozen(pair)).toBe(true);
              expect(plans[s.which].onePair(policy, s.r, s.t)).toBe(pair);
            }
            last = { which: s.which, r: s.r, t: s.t, pair };
          }
        },
      ),
      { numRuns: 300 },
    );
  });
});

describe('legacy pairs of a header plan', () => {
  it('equal the standalone legacy headers for any decision and clock, and are shared where they repeat', () => {
    const a = definePolicy({ name: 'a', quota: 7, window: 60, burst: 3 });
    const b = definePolicy({ name: 'b', quota: 1_000, window: 3_600 });
    const plan = new HeaderPlan([a, b]);
    fc.assert(
      fc.property(
        fc.array(
          fc.record({ which: fc.constantFrom(0, 1), r: fc.nat(9), t: fc.nat(5), nowMs: fc.nat(5_000) }),
          { maxLength: 20 },
        ),
        (steps) => {
          for (const s of steps) {
            const policy = s.which === 0 ? a : b;
            const reset = Math.floor(s.nowMs / 1000) + s.t;
            const fixed = plan.legacyPairs(policy);
            const pairs = [
              fixed.limit,
              ['X-RateLimit-Remaining', String(s.r)],
              plan.legacyResetPair(reset),
              fixed.policy,
            ];
            const d = {
              allowed: true,
              violated: [],
              outcomes: [
                { policy, key: 'k', limited: false, remaining: s.r, resetSeconds: s.t, retryAfterSeconds: 0 },
              ],
            } as unknown as Decision;
            expect(pairs).toEqual(legacyRateLimitHeaders(d, Math.floor(s.nowMs / 1000) * 1000));
            // Shared and frozen: one verdict's caller cannot change what the next one sends.
            expect(plan.legacyPairs(policy)).toBe(fixed);
            expect(Object.isFrozen(fixed.limit) && Object.isFrozen(fixed.policy)).toBe(true);
            expect(plan.legacyResetPair(reset)).toBe(plan.legacyResetPair(reset));
          }
        },
      ),
      { numRuns: 200 },
    );
  });
});
