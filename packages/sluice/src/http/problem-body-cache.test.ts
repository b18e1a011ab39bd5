import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { type Decision, Limiter, ManualClock } from '../core/index.js';
import { MemoryStore } from '../memory/index.js';
import { problemTypeResolver, rateLimitProblem, rateLimitProblemBody } from './problem.js';

/** Any UTF-16 code unit, lone surrogates and control characters included: what JSON.stringify must escape. */
const anyText = fc.string({ unit: fc.integer({ min: 0, max: 0xffff }).map((c) => String.fromCharCode(c)) });
const text = fc.oneof(anyText, fc.string(), fc.constantFrom('/', '/a?b=1', 'id-1', '"', '\\', '\u2028'));

describe('the problem body of a flood of denials', () => {
  it('is JSON.stringify of the problem for every denial in turn, whatever came before', () => {
    // One policy and one limiter for the whole run: the body's per-policy, per-path and per-retry caches see
    // every sequence of paths, ids and clocks, and no earlier denial may leak into a later body.
    const clock = new ManualClock(0);
    const limiter = new Limiter({
      policies: [{ name: 'p "quoted"', quota: 5, window: 60, burst: 2 }],
      store: new MemoryStore({ clock, sweepIntervalMs: 0 }),
    });
    const typeOfs = [undefined, problemTypeResolver('https://e.example/problems/')];
    fc.assert(
      fc.property(
        fc.array(
          fc.record({
            path: text,
            id: text,
            advanceMs: fc.integer({ min: 0, max: 30_000 }),
            nowMs: fc.integer({ min: 0, max: 2_000_000_000_000 }),
            typeOf: fc.constantFrom(0, 1),
            code: fc.option(fc.constantFrom('rate_limited', 'custom "code"')),
          }),
          { minLength: 1, maxLength: 12 },
        ),
        (steps) => {
          for (const s of steps) {
            clock.advance(s.advanceMs);
            const d = limiter.decide([{ policy: 'p "quoted"', key: 'k' }]) as Decision;
            if (d.allowed) continue;
            const input = {
              decision: d,
              path: s.path,
              correlationId: s.id,
              nowMs: s.nowMs,
              typeOf: typeOfs[s.typeOf],
              code: s.code ?? undefined,
            };
            expect(rateLimitProblemBody(input)).toBe(JSON.stringify(rateLimitProblem(input)));
          }
        },
      ),
      { numRuns: 300 },
    );
  });
});
