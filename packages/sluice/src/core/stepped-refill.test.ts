import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  definePolicy,
  ErrorCode,
  evaluate,
  msUntil,
  nextLast,
  refill,
  remainingTokens,
  retryAfterSeconds,
  SluiceError,
  secondsUntilFull,
} from './index.js';

function errorOf(fn: () => unknown): SluiceError {
  try {
    fn();
  } catch (e) {
    if (e instanceof SluiceError) return e;
    throw e;
  }
  throw new Error('expected an error');
}

describe('stepped refill: policy', () => {
  it('derives q and w from refill: 5 tokens every 10 s, burst 50', () => {
    const p = definePolicy({ name: 'pe', burst: 50, refill: { tokens: 5, every: 10 } });
    expect(p).toMatchObject({ quota: 5, window: 10, burst: 50, unitsPerToken: 10_000, stepMs: 10_000 });
    expect(p.refill).toEqual({ tokens: 5, every: 10 });
    expect(p.stepUnits).toBe(5 * 10_000);
    expect(Object.isFrozen(p.refill)).toBe(true);
  });

  it('keeps continuous policies continuous (stepMs 0)', () => {
    const p = definePolicy({ name: 'c', quota: 120, window: 60 });
    expect(p.stepMs).toBe(0);
    expect(p.refill).toBeUndefined();
  });

  it.each([
    [{ refill: { tokens: 0, every: 10 } }, 'policy.refill.tokens must be an integer >= 1, got 0'],
    [{ refill: { tokens: 5, every: 0.5 } }, 'policy.refill.every must be an integer >= 1, got 0.5'],
    [{ refill: { tokens: 5, every: 10, mode: 'x' } }, /policy\.refill\.mode/],
    [{ refill: 'often' }, /policy\.refill must be an object/],
    [
      { quota: 6, refill: { tokens: 5, every: 10 } },
      'policy.quota must be equal to refill.tokens (5) or left out, got 6',
    ],
    [
      { window: 60, refill: { tokens: 5, every: 10 } },
      'policy.window must be equal to refill.every (10) or left out, got 60',
    ],
  ])('rejects %j with a message naming option, expectation and value', (patch, message) => {
    const e = errorOf(() => definePolicy({ name: 'p', burst: 50, ...(patch as object) } as never));
    expect(e.code).toBe(ErrorCode.InvalidOption);
    if (typeof message === 'string') expect(e.message).toBe(message);
    else expect(e.message).toMatch(message);
  });

  it('still requires quota and window without refill', () => {
    expect(errorOf(() => definePolicy({ name: 'p' } as never)).message).toMatch(/^policy\.quota/);
  });
});

describe('stepped refill: arithmetic', () => {
  const p = definePolicy({ name: 'pe', burst: 50, refill: { tokens: 5, every: 10 } });
  const T = p.unitsPerToken;

  it('adds whole steps only, never part of one', () => {
    expect(refill(p, 0, 9_999)).toBe(0);
    expect(refill(p, 0, 10_000)).toBe(5 * T);
    expect(refill(p, 0, 19_999)).toBe(5 * T);
    expect(refill(p, 0, 25_000)).toBe(10 * T);
    expect(refill(p, 48 * T, 10_000)).toBe(50 * T); // capped at burst
    expect(refill(p, 0, 10 ** 12)).toBe(50 * T);
  });

  it('moves the timeline by whole steps, and restarts it when the bucket is full', () => {
    expect(nextLast(p, refill(p, 0, 25_000), 1_000, 26_000)).toBe(21_000);
    expect(nextLast(p, refill(p, 0, 5_000), 1_000, 6_000)).toBe(1_000);
    expect(nextLast(p, p.capacityUnits, 1_000, 500_000)).toBe(500_000);
    expect(nextLast(p, 0, 9_000, 8_000)).toBe(9_000); // a clock that went back moves nothing
    const c = definePolicy({ name: 'c', quota: 1, window: 1 });
    expect(nextLast(c, 0, 1_000, 2_000)).toBe(2_000);
    expect(nextLast(c, 0, 3_000, 2_000)).toBe(3_000);
  });

  it('gives t and Retry-After at the step that brings the tokens, from the phase in the step', () => {
    // 49 tokens right after the first take: full again at the next step (10 s).
    expect(remainingTokens(p, 49 * T)).toBe(49);
    expect(secondsUntilFull(p, 49 * T, 0)).toBe(10);
    expect(secondsUntilFull(p, 49 * T, 3_500)).toBe(7); // 6.5 s -> 7
    // Empty, 2.001 s into the step: 1 token comes with the next step (7.999 s -> 8), 50 with the tenth.
    expect(retryAfterSeconds(p, 0, 1, 2_001)).toBe(8);
    expect(retryAfterSeconds(p, 0, 6, 2_001)).toBe(18);
    expect(secondsUntilFull(p, 0, 2_001)).toBe(98);
    expect(msUntil(p, 0, T, 2_001)).toBe(7_999);
    expect(msUntil(p, 0, 6 * T, 2_001)).toBe(17_999);
    // 9.9995 s into a step the wait rounds up to 1, never 0.
    expect(retryAfterSeconds(p, 0, 1, 9_999)).toBe(1);
    expect(secondsUntilFull(p, p.capacityUnits, 4_000)).toBe(0);
  });

  it('decides through evaluate with each check phase', () => {
    const c = definePolicy({ name: 'c', quota: 60, window: 60, burst: 10 });
    const units = Float64Array.of(0, c.capacityUnits);
    const phases = Float64Array.of(4_000, 0);
    const d = evaluate(
      [
        { policy: p, key: 'k' },
        { policy: c, key: 'k' },
      ],
      units,
      1,
      'decide',
      phases,
    );
    expect(d.allowed).toBe(false);
    expect(d.retryAfterSeconds).toBe(6);
    expect(d.outcomes[0]).toMatchObject({ remaining: 0, resetSeconds: 96, retryAfterSeconds: 6 });
    expect(d.outcomes[1]).toMatchObject({ remaining: 10, resetSeconds: 0, limited: false });
  });

  it('reserves queue debt that is paid back by whole steps', () => {
    const q = definePolicy({
      name: 'q',
      burst: 2,
      refill: { tokens: 1, every: 5 },
      queue: { limit: 3, maxWaitMs: 12_000 },
    });
    const units = Float64Array.of(0);
    const d = evaluate([{ policy: q, key: 'k' }], units, 2, 'reserve', Float64Array.of(1_000));
    // Two tokens of debt: due with the second step, 2 x 5 s - 1 s = 9 s.
    expect(d).toMatchObject({ allowed: true, delayMs: 9_000 });
  });

  it('matches a whole-token model for any state (property)', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 50 }),
        fc.integer({ min: 1, max: 600 }),
        fc.integer({ min: 1, max: 500 }),
        fc.integer({ min: 0, max: 500 }),
        fc.integer({ min: 0, max: 599_999 }),
        fc.integer({ min: 1, max: 500 }),
        (tokens, every, burst, held, phaseSeed, cost) => {
          const q = definePolicy({ name: 'q', burst, refill: { tokens, every } });
          const have = Math.min(held, burst);
          const phase = phaseSeed % (every * 1000);
          const units = have * q.unitsPerToken;
          const stepsToFull = Math.ceil((burst - have) / tokens);
          const wantT = have >= burst ? 0 : Math.ceil((stepsToFull * every * 1000 - phase) / 1000);
          expect(secondsUntilFull(q, units, phase)).toBe(wantT);
          expect(remainingTokens(q, units)).toBe(have);
          if (cost > have) {
            const steps = Math.ceil((cost - have) / tokens);
            const want = Math.max(1, Math.ceil((steps * every * 1000 - phase) / 1000));
            expect(retryAfterSeconds(q, units, cost, phase)).toBe(want);
          }
        },
      ),
      { numRuns: 300 },
    );
  });
});
