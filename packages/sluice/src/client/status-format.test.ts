import { describe, expect, it } from 'vitest';
import { ErrorCode } from '../core/errors.js';
import { ManualClock } from '../core/manual-clock.js';
import {
  DEFAULT_STATUS_MESSAGES,
  defineRateLimitStatus,
  formatCountdown,
  mostConstrained,
  nextChangeAt,
  type RateLimitEntry,
  RateLimitState,
  readRateLimitHeaders,
  statusView,
} from './index.js';

const ORIGIN = 'https://a.test';

/** The entry a client holds after responses with exactly these fields, each at a clock reading. */
function entryAfter(
  responses: { at: number; policy: string; state: string; retryAfter?: number; status?: number }[],
): RateLimitEntry {
  const clock = new ManualClock(0);
  const state = new RateLimitState(clock);
  let name = '';
  for (const r of responses) {
    clock.advance(r.at - clock.now());
    const headers = new Headers({ 'RateLimit-Policy': r.policy, RateLimit: r.state });
    const observations = readRateLimitHeaders(headers, 0);
    name = observations[0].policy;
    state.record(ORIGIN, observations, r.retryAfter, r.status ?? 200);
  }
  return state.get(ORIGIN, name) as RateLimitEntry;
}

// The standard tier of packages/gateway/examples/rate-limits.yaml: 300 per minute, bursts of 50.
const STANDARD = '"standard";q=300;w=60';

describe('statusView of a bucket whose burst is below its quota', () => {
  it('counts what the bucket holds, not the quota: 49 of 50 after one request, 50 of 50 once full', () => {
    const e = entryAfter([{ at: 0, policy: STANDARD, state: '"standard";r=49;t=1' }]);
    expect(statusView(e, 0, 0.2)).toEqual({
      level: 'ok',
      remaining: 49,
      capacity: 50,
      secondsToNext: 0,
      secondsToFull: 1,
    });
    // The one token is back after 200 ms at 5 per second; never "300 of 300".
    expect(statusView(e, 200, 0.2)).toEqual({
      level: 'ok',
      remaining: 50,
      capacity: 50,
      secondsToNext: 0,
      secondsToFull: 0,
    });
    expect(statusView(e, 60_000, 0.2).remaining).toBe(50);
  });

  it('when exhausted, shows the next request in 1 s and the bucket full in 10 s, each on its own', () => {
    const e = entryAfter([
      { at: 0, policy: STANDARD, state: '"standard";r=49;t=1' },
      { at: 0, policy: STANDARD, state: '"standard";r=0;t=10', retryAfter: 1, status: 429 },
    ]);
    expect(statusView(e, 0, 0.2)).toEqual({
      level: 'exhausted',
      remaining: 0,
      capacity: 50,
      secondsToNext: 1,
      secondsToFull: 10,
    });
    expect(statusView(e, 200, 0.2)).toEqual({
      level: 'warning',
      remaining: 1,
      capacity: 50,
      secondsToNext: 0,
      secondsToFull: 10,
    });
    expect(statusView(e, 10_000, 0.2)).toMatchObject({ level: 'ok', remaining: 50, secondsToFull: 0 });
  });

  it('warns strictly below the fraction of the capacity: 9 of 50 warns, 10 of 50 does not', () => {
    // What a bucket of 50 reports with 9 and with 10 whole tokens left (t rounds the fill time up).
    const at = (r: number, t: number) =>
      statusView(
        entryAfter([
          { at: 0, policy: STANDARD, state: '"standard";r=49;t=1' },
          { at: 0, policy: STANDARD, state: `"standard";r=${r};t=${t}` },
        ]),
        0,
        0.2,
      );
    expect(at(9, 9)).toMatchObject({ level: 'warning', remaining: 9, capacity: 50 });
    expect(at(10, 8)).toMatchObject({ level: 'ok', remaining: 10, capacity: 50 });
    expect(statusView(undefined, 0, 0.2).level).toBe('unknown');
  });

  it('keeps the largest capacity seen: a later response from a drained bucket does not shrink it', () => {
    const e = entryAfter([
      { at: 0, policy: STANDARD, state: '"standard";r=49;t=1' },
      { at: 100, policy: STANDARD, state: '"standard";r=20;t=6' },
    ]);
    expect(statusView(e, 100, 0.2)).toMatchObject({ remaining: 20, capacity: 50, secondsToFull: 6 });
  });
});

describe('nextChangeAt', () => {
  it('wakes when a displayed second changes or a countdown ends, and stops once the bucket is full', () => {
    const e = entryAfter([
      { at: 0, policy: STANDARD, state: '"standard";r=49;t=1' },
      { at: 0, policy: STANDARD, state: '"standard";r=0;t=10', retryAfter: 1, status: 429 },
    ]);
    expect(nextChangeAt(e, 0)).toBe(200);
    expect(nextChangeAt(e, 200)).toBe(1000);
    expect(nextChangeAt(e, 9_500)).toBe(10_000);
    expect(nextChangeAt(e, 10_000)).toBeUndefined();
    expect(nextChangeAt(undefined, 0)).toBeUndefined();
  });
});

describe('mostConstrained and formatCountdown', () => {
  it('picks the lowest share of the capacity left now among entries that know their remaining', () => {
    const minute = entryAfter([{ at: 0, policy: STANDARD, state: '"standard";r=30;t=5' }]);
    const hour = entryAfter([
      { at: 0, policy: '"standard.hour";q=10000;w=3600', state: '"standard.hour";r=9000;t=360' },
    ]);
    // 30 of at least 51 (59%) against 9000 of at least 9998 (90%).
    expect(mostConstrained([hour, minute], 0)?.policy).toBe('standard');
    expect(mostConstrained([], 0)).toBeUndefined();
  });

  it('formats seconds, minutes and hours', () => {
    expect(formatCountdown(42)).toBe('42 s');
    expect(formatCountdown(245)).toBe('4:05');
    expect(formatCountdown(3600)).toBe('1:00:00');
  });

  it('labels each time: the next request and the full bucket', () => {
    expect(DEFAULT_STATUS_MESSAGES.remaining(49, 50)).toBe('49 of 50 left');
    expect(DEFAULT_STATUS_MESSAGES.nextIn('1 s')).toBe('next request in 1 s');
    expect(DEFAULT_STATUS_MESSAGES.fullIn('10 s')).toBe('full in 10 s');
    expect(DEFAULT_STATUS_MESSAGES.full).toBe('full');
    expect(DEFAULT_STATUS_MESSAGES.announceExhausted('1 s')).toBe(
      'Rate limit reached. The next request passes in 1 s.',
    );
  });
});

describe('defineRateLimitStatus outside a browser', () => {
  it('throws a clear error instead of failing at import', () => {
    expect(() => defineRateLimitStatus()).toThrowError(
      expect.objectContaining({ code: ErrorCode.InvalidOption }),
    );
  });
});
