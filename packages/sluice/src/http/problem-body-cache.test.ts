import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { type Decision, Limiter, ManualClock } from '../core/index.js';
import { MemoryStore } from '../memory/index.js';
import { correlationIdOf } from './correlation-id.js';
import {
  problemBodyBytes,
  problemTypeResolver,
  rateLimitProblem,
  rateLimitProblemBody,
  rateLimitProblemBodyOf,
} from './problem.js';

/** Any UTF-16 code unit, lone surrogates and control characters included: what JSON.stringify must escape. */
const anyText = fc.string({ unit: fc.integer({ min: 0, max: 0xffff }).map((c) => String.fromCharCode(c)) });
const text = fc.oneof(anyText, fc.string(), fc.constantFrom('/', '/a?b=1', 'id-1', '"', '\\', '\u2028'));

describe('the problem body of a flood of denials', () => {
  // First in the file: the module's cache of the last path starts out holding '/', and an empty target as the
  // first denial of the process must not be answered from it.
  it('gives the first denial of the process its own instance, an empty target included', () => {
    const clock = new ManualClock(0);
    const limiter = new Limiter({
      policies: [{ name: 'first', quota: 1, window: 60, burst: 1 }],
      store: new MemoryStore({ clock, sweepIntervalMs: 0 }),
    });
    limiter.decide([{ policy: 'first', key: 'k' }]);
    const d = limiter.decide([{ policy: 'first', key: 'k' }]) as Decision;
    const input = { decision: d, path: '', correlationId: 'c', nowMs: 0 };
    expect(rateLimitProblemBody(input)).toBe(JSON.stringify(rateLimitProblem(input)));
    expect(JSON.parse(rateLimitProblemBody(input)).instance).toBe('');
  });

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
            const body = rateLimitProblemBody(input);
            expect(body).toBe(JSON.stringify(rateLimitProblem(input)));
            expect(problemBodyBytes(body)).toBe(Buffer.byteLength(body));
          }
        },
      ),
      { numRuns: 300 },
    );
  });

  it('counts the UTF-8 bytes of the body just built, and of any other string, beyond ASCII too', () => {
    // Policy names, paths and ids beyond ASCII: the count from the parts must still be the bytes on the wire.
    const clock = new ManualClock(0);
    const names = ['débit ✓', 'plain', 'emoji 🚦'];
    const limiter = new Limiter({
      policies: names.map((name) => ({ name, quota: 1, window: 60, burst: 1 })),
      store: new MemoryStore({ clock, sweepIntervalMs: 0 }),
    });
    fc.assert(
      fc.property(
        fc.array(
          fc.record({
            policy: fc.constantFrom(...names),
            key: fc.constantFrom('a', 'b'),
            path: text,
            id: fc.oneof(text, fc.constant(correlationIdOf({}))),
            checked: fc.boolean(),
            advanceMs: fc.integer({ min: 0, max: 5_000 }),
            other: text,
          }),
          { minLength: 1, maxLength: 12 },
        ),
        (steps) => {
          for (const s of steps) {
            clock.advance(s.advanceMs);
            const d = limiter.decide([{ policy: s.policy, key: s.key }]) as Decision;
            if (d.allowed) continue;
            const correlationId = s.checked ? correlationIdOf({ 'x-request-id': s.id }) : s.id;
            const input = { decision: d, path: s.path, correlationId, nowMs: clock.now() };
            const body = rateLimitProblemBodyOf(input, s.checked);
            expect(body).toBe(JSON.stringify(rateLimitProblem(input)));
            expect(problemBodyBytes(body)).toBe(Buffer.byteLength(body));
            // A string that is not the body just built is measured, whatever it holds.
            expect(problemBodyBytes(s.other)).toBe(Buffer.byteLength(s.other));
          }
        },
      ),
      { numRuns: 300 },
    );
  });

  it('quotes a correlation id from the request header or a generated one as is, as JSON.stringify would', () => {
    const limiter = new Limiter({
      policies: [{ name: 'p', quota: 1, window: 60, burst: 1 }],
      store: new MemoryStore({ clock: new ManualClock(0), sweepIntervalMs: 0 }),
    });
    limiter.decide([{ policy: 'p', key: 'k' }]);
    const d = limiter.decide([{ policy: 'p', key: 'k' }]) as Decision;
    expect(d.allowed).toBe(false);
    fc.assert(
      fc.property(fc.option(text), (given) => {
        const headers = given === null ? {} : { 'x-request-id': given };
        const input = { decision: d, path: '/a', correlationId: correlationIdOf(headers), nowMs: 0 };
        expect(rateLimitProblemBodyOf(input, true)).toBe(JSON.stringify(rateLimitProblem(input)));
      }),
      { numRuns: 300 },
    );
  });
});
