import { describe, expect, it } from 'vitest';
import { ErrorCode } from '../core/errors.js';
import {
  defineRateLimitStatus,
  formatCountdown,
  mostConstrained,
  type RateLimitEntry,
  statusView,
} from './index.js';

const entry = (over: Partial<RateLimitEntry>): RateLimitEntry => ({
  origin: 'https://a.test',
  policy: 'api',
  remaining: 50,
  quota: 100,
  windowSeconds: 60,
  quotaUnit: 'requests',
  resetSeconds: 30,
  observedAt: 0,
  resetAt: 30_000,
  form: 'ratelimit',
  ...over,
});

describe('statusView', () => {
  it('warns strictly below the fraction: 19% warns, 20% and 21% do not', () => {
    expect(statusView(entry({ remaining: 19 }), 0, 0.2).level).toBe('warning');
    expect(statusView(entry({ remaining: 20 }), 0, 0.2).level).toBe('ok');
    expect(statusView(entry({ remaining: 21 }), 0, 0.2).level).toBe('ok');
    expect(statusView(entry({ remaining: 0 }), 0, 0.2).level).toBe('exhausted');
    expect(statusView(entry({ remaining: 1, quota: undefined }), 0, 0.2).level).toBe('ok');
    expect(statusView(undefined, 0, 0.2).level).toBe('unknown');
  });

  it('counts whole seconds up and restores the quota once the reset has passed', () => {
    expect(statusView(entry({ remaining: 3 }), 29_001, 0.2)).toEqual({
      level: 'warning',
      remaining: 3,
      quota: 100,
      secondsToReset: 1,
    });
    expect(statusView(entry({ remaining: 3 }), 30_000, 0.2)).toEqual({
      level: 'ok',
      remaining: 100,
      quota: 100,
      secondsToReset: 0,
    });
  });
});

describe('mostConstrained and formatCountdown', () => {
  it('picks the lowest remaining fraction among entries that know their remaining', () => {
    const a = entry({ policy: 'a', remaining: 30, quota: 50 });
    const b = entry({ policy: 'b', remaining: 100, quota: 1000 });
    const c = entry({ policy: 'c', remaining: undefined });
    expect(mostConstrained([a, b, c])?.policy).toBe('b');
    expect(mostConstrained([c])).toBeUndefined();
  });

  it('formats seconds, minutes and hours', () => {
    expect(formatCountdown(42)).toBe('42 s');
    expect(formatCountdown(245)).toBe('4:05');
    expect(formatCountdown(3600)).toBe('1:00:00');
  });
});

describe('defineRateLimitStatus outside a browser', () => {
  it('throws a clear error instead of failing at import', () => {
    expect(() => defineRateLimitStatus()).toThrowError(
      expect.objectContaining({ code: ErrorCode.InvalidOption }),
    );
  });
});
