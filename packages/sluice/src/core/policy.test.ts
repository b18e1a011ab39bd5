import { describe, expect, it } from 'vitest';
import { definePolicy, ErrorCode, SluiceError } from './index.js';

function errorOf(fn: () => unknown): SluiceError {
  try {
    fn();
  } catch (e) {
    if (e instanceof SluiceError) return e;
    throw e;
  }
  throw new Error('expected an error');
}

describe('definePolicy', () => {
  it('defaults burst to quota and precomputes exact fixed-point constants', () => {
    const p = definePolicy({ name: 'rl.write', quota: 120, window: 60 });
    expect(p).toMatchObject({ burst: 120, shadow: false, unitsPerToken: 60_000, capacityUnits: 7_200_000 });
    expect(p.refillPerMs).toBe(120);
    expect(Object.isFrozen(p)).toBe(true);
  });

  it.each([
    ['quota', { quota: 0 }, 'policy.quota must be an integer >= 1, got 0'],
    ['quota', { quota: -5 }, 'policy.quota must be an integer >= 1, got -5'],
    ['window', { window: 1.5 }, 'policy.window must be an integer >= 1, got 1.5'],
    ['burst', { burst: 0 }, 'policy.burst must be an integer >= 1, got 0'],
    ['name', { name: '' }, 'policy.name must be a non-empty string, got ""'],
    ['shadow', { shadow: 'yes' }, 'policy.shadow must be a boolean, got "yes"'],
  ])('rejects a bad %s with a message naming option, expectation and value', (_, patch, message) => {
    const e = errorOf(() => definePolicy({ name: 'p', quota: 10, window: 60, ...(patch as object) }));
    expect(e.code).toBe(ErrorCode.InvalidOption);
    expect(e.message).toBe(message);
  });

  it('rejects unknown options instead of ignoring a typo', () => {
    const e = errorOf(() => definePolicy({ name: 'p', quota: 1, window: 1, brust: 3 } as never));
    expect(e.message).toMatch(/policy\.brust/);
  });

  it('validates queue settings', () => {
    expect(
      errorOf(() => definePolicy({ name: 'p', quota: 1, window: 1, queue: { limit: 0, maxWaitMs: 1 } }))
        .message,
    ).toBe('policy.queue.limit must be an integer >= 1, got 0');
    const p = definePolicy({ name: 'p', quota: 1, window: 1, queue: { limit: 2, maxWaitMs: 10 } });
    expect(p.debtUnits).toBe(2000);
  });

  it('refuses sizes whose units would leave exact double arithmetic', () => {
    const e = errorOf(() => definePolicy({ name: 'p', quota: 1, window: 86_400 * 365, burst: 2 ** 40 }));
    expect(e.details.option).toBe('policy.burst');
  });

  it('names the path it was given', () => {
    expect(errorOf(() => definePolicy({ name: 'p', quota: 0, window: 1 }, 'policies[3]')).message).toMatch(
      /^policies\[3\]\.quota/,
    );
  });
});
