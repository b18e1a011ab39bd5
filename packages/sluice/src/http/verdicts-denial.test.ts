import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { Limiter, ManualClock } from '../core/index.js';
import { MemoryStore } from '../memory/index.js';
import { createHttpLimiter } from './http-limiter.js';
import { PROBLEM_CONTENT_TYPE } from './problem.js';
import { formatDecisionHeaders } from './rate-limit-headers.js';
import type { HttpRequestInfo, Verdict } from './types.js';

const REQ: HttpRequestInfo = { method: 'GET', path: '/', headers: {}, remoteAddress: '10.0.0.1' };

function denied(window: number, burst: number) {
  const clock = new ManualClock(0);
  const limiter = new Limiter({
    policies: [{ name: 'p', quota: 1, window, burst }],
    store: new MemoryStore({ clock, sweepIntervalMs: 0 }),
  });
  const http = createHttpLimiter({
    limiter,
    rules: [{ policies: ['p'], key: 'ip' }],
    wallClock: () => clock.now(),
  });
  return { http, clock };
}

const retryPair = (v: Verdict) => v.headers.find(([n]) => n === 'Retry-After');

describe('the headers of a denial', () => {
  it('share one Retry-After line per value, so a flood of denials allocates none for it', () => {
    const { http } = denied(60, 1);
    http.evaluate(REQ);
    const a = http.evaluate(REQ) as Verdict;
    const b = http.evaluate(REQ) as Verdict;
    expect(a.action).toBe('deny');
    expect(retryPair(a)).toEqual(['Retry-After', '60']);
    expect(retryPair(b)).toBe(retryPair(a));
    // The list itself stays the verdict's own: the correlation id differs per denial.
    expect(b.headers).not.toBe(a.headers);
  });

  it('say when to retry for any window, beyond the shared lines too', () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 400_000 }), fc.integer({ min: 0, max: 3 }), (window, waits) => {
        const { http, clock } = denied(window, 1);
        http.evaluate(REQ);
        clock.advance(waits * 1000);
        const v = http.evaluate(REQ) as Verdict;
        if (v.action !== 'deny') return;
        expect(retryPair(v)).toEqual([
          'Retry-After',
          String(Math.max(1, v.decision?.retryAfterSeconds ?? 0)),
        ]);
        expect(Object.isFrozen(retryPair(v))).toBe(true);
      }),
      { numRuns: 200 },
    );
  });

  it('are the standalone headers and the problem fields, in order, in every mode, for rate and concurrency', () => {
    // The verdict's lists take shortcuts for one-policy decisions (shared pairs, no outcome list); what they say
    // must stay what formatDecisionHeaders says of the same decision, followed by the problem's fields.
    const modes = ['draft-11', 'both', 'legacy', 'none'] as const;
    fc.assert(
      fc.property(
        fc.constantFrom(...modes),
        fc.boolean(),
        fc.array(fc.integer({ min: 0, max: 5_000 }), { minLength: 1, maxLength: 8 }),
        (mode, concurrent, steps) => {
          const clock = new ManualClock(0);
          const limiter = new Limiter({
            policies: [
              concurrent ? { name: 'p', concurrent: 1 } : { name: 'p', quota: 2, window: 60, burst: 2 },
            ],
            store: new MemoryStore({ clock, sweepIntervalMs: 0 }),
          });
          const http = createHttpLimiter({
            limiter,
            rules: [{ policies: ['p'], key: 'ip' }],
            headers: mode,
            wallClock: () => clock.now(),
          });
          for (const ms of steps) {
            clock.advance(ms);
            const v = http.evaluate(REQ) as Verdict;
            const d = v.decision;
            if (d === undefined) throw new Error('a decided verdict carries its decision');
            const expected = formatDecisionHeaders(d, { mode, nowMs: clock.now() }).map(([n, x]) => [n, x]);
            if (v.action === 'deny') {
              expected.push(
                ['Content-Type', PROBLEM_CONTENT_TYPE],
                ['Cache-Control', 'no-store'],
                ['X-Content-Type-Options', 'nosniff'],
                ['X-Request-Id', JSON.parse(v.body as string).correlation_id],
              );
            }
            expect(v.headers.map(([n, x]) => [n, x])).toEqual(expected);
          }
        },
      ),
      { numRuns: 200 },
    );
  });
});
