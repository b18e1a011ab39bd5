import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { type Decision, Limiter, ManualClock } from '../core/index.js';
import { MemoryStore } from '../memory/index.js';
import { problemTypeResolver, rateLimitProblem, rateLimitProblemBody, windowPhrase } from './problem.js';

describe('problem details', () => {
  it('name the window in words where there is one', () => {
    expect([1, 60, 3600, 86400, 90].map(windowPhrase)).toEqual([
      'second',
      'minute',
      'hour',
      'day',
      '90 seconds',
    ]);
  });

  it('join the type base with or without a trailing slash', () => {
    expect(problemTypeResolver('https://e.example/p')?.('x')).toBe('https://e.example/p/x');
    expect(problemTypeResolver('https://e.example/p/')?.('x')).toBe('https://e.example/p/x');
    expect(problemTypeResolver(undefined)).toBeUndefined();
  });

  it('name the violated policy with its burst, its refill rate and when to retry', () => {
    const clock = new ManualClock(0);
    const limiter = new Limiter({
      policies: [{ name: 'rl.write', quota: 120, window: 60, burst: 3 }],
      store: new MemoryStore({ clock, sweepIntervalMs: 0 }),
      clock,
    });
    for (let i = 0; i < 3; i++) expect((limiter.check('rl.write', 'k') as Decision).allowed).toBe(true);
    const d = limiter.check('rl.write', 'k') as Decision;
    expect(d.allowed).toBe(false);
    const input = { decision: d, path: '/w', correlationId: 'c', nowMs: 0 };
    const detail =
      'Rate limit "rl.write" exceeded: bursts of up to 3 requests, refilled at 120 per minute; retry in 1 s.';
    expect(rateLimitProblem(input).detail).toBe(detail);
    expect(JSON.parse(rateLimitProblemBody(input)).detail).toBe(detail);
  });

  it('give no retryAfter for a cost above the burst, which no wait admits, and describe the untouched bucket', () => {
    const clock = new ManualClock(0);
    const limiter = new Limiter({
      policies: [{ name: 'llm', quota: 1, window: 3600, burst: 1000 }],
      store: new MemoryStore({ clock, sweepIntervalMs: 0 }),
      clock,
    });
    const d = limiter.check('llm', 'k', 5000) as Decision;
    expect(d.reason).toBe('cost_exceeds_burst');
    const input = { decision: d, path: '/v1', correlationId: 'c', nowMs: 0 };
    const problem = rateLimitProblem(input);
    expect(problem.retryAfter).toBeUndefined();
    expect(problem.remaining).toBe(1000);
    expect(problem.reset).toBe(0);
    expect(JSON.parse(rateLimitProblemBody(input))).not.toHaveProperty('retryAfter');
  });

  it('say "request" for a burst of one and name other windows in words or seconds', () => {
    const clock = new ManualClock(0);
    const limiter = new Limiter({
      policies: [
        { name: 'seal', quota: 5, window: 3600, burst: 1 },
        { name: 'odd', quota: 7, window: 90, burst: 2 },
      ],
      store: new MemoryStore({ clock, sweepIntervalMs: 0 }),
      clock,
    });
    limiter.check('seal', 'k');
    const seal = limiter.check('seal', 'k') as Decision;
    expect(rateLimitProblem({ decision: seal, path: '/', correlationId: 'c' }).detail).toBe(
      'Rate limit "seal" exceeded: bursts of up to 1 request, refilled at 5 per hour; retry in 720 s.',
    );
    limiter.check('odd', 'k', 2);
    const odd = limiter.check('odd', 'k') as Decision;
    expect(rateLimitProblem({ decision: odd, path: '/', correlationId: 'c' }).detail).toBe(
      'Rate limit "odd" exceeded: bursts of up to 2 requests, refilled at 7 per 90 seconds; retry in 13 s.',
    );
  });

  it('say a concurrency refusal in requests in flight, not in a refill it does not have', () => {
    const limiter = new Limiter({
      policies: [{ name: 'reports', concurrent: 2, retryAfter: 1 }],
      store: new MemoryStore({ sweepIntervalMs: 0 }),
    });
    limiter.check('reports', 'k', 2);
    const d = limiter.check('reports', 'k') as Decision;
    const expected =
      'Concurrency limit "reports" reached: at most 2 requests in flight at once; retry in 1 s.';
    expect(rateLimitProblem({ decision: d, path: '/', correlationId: 'c', nowMs: 0 }).detail).toBe(expected);
    expect(
      JSON.parse(rateLimitProblemBody({ decision: d, path: '/', correlationId: 'c', nowMs: 0 })).detail,
    ).toBe(expected);
  });

  it('explain a cost above the burst', () => {
    const limiter = new Limiter({
      policies: [{ name: 'p', quota: 10, window: 60, burst: 3 }],
      store: new MemoryStore({ sweepIntervalMs: 0 }),
    });
    const d = limiter.check('p', 'k', 5) as Decision;
    expect(rateLimitProblem({ decision: d, path: '/', correlationId: 'c', nowMs: 0 }).detail).toBe(
      'This request costs 5 tokens, more than the burst of 3 that policy "p" allows.',
    );
  });

  it('assembles the body exactly as JSON.stringify of the problem, for any decision and path', () => {
    fc.assert(
      fc.property(
        fc.array(
          fc.record({ quota: fc.integer({ min: 1, max: 1000 }), burst: fc.integer({ min: 1, max: 5 }) }),
          {
            minLength: 1,
            maxLength: 3,
          },
        ),
        fc.integer({ min: 1, max: 8 }),
        fc.string(),
        fc.option(fc.constantFrom('https://e.example/problems/', 'urn:x:')),
        (specs, cost, path, base) => {
          const clock = new ManualClock(0);
          const limiter = new Limiter({
            policies: specs.map((s, i) => ({ name: `p${i}`, quota: s.quota, window: 60, burst: s.burst })),
            store: new MemoryStore({ clock, sweepIntervalMs: 0 }),
          });
          const checks = specs.map((_, i) => ({ policy: `p${i}`, key: 'k' }));
          for (let i = 0; i < 6; i++) {
            const d = limiter.decide(checks, cost) as Decision;
            if (d.allowed) continue;
            const input = {
              decision: d,
              path: `/${path}`,
              correlationId: 'id-1',
              nowMs: 1_700_000_000_123,
              typeOf: problemTypeResolver(base ?? undefined),
            };
            const problem = rateLimitProblem(input);
            expect(rateLimitProblemBody(input)).toBe(JSON.stringify(problem));
            // The detail and the Retry-After members never disagree about when to retry.
            if (d.reason !== 'cost_exceeds_burst') {
              expect(problem.detail).toContain(`; retry in ${problem.retryAfter} s.`);
            }
          }
        },
      ),
    );
  });
});
