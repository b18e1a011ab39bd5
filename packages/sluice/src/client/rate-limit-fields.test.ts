import fc from 'fast-check';
import { type Item, serializeList, Token } from 'structured-headers';
import { describe, expect, it } from 'vitest';
import {
  fullJitterDelayMs,
  parseHttpDate,
  parseLegacyRateLimit,
  parseRateLimit,
  parseRateLimitPolicy,
  parseRetryAfter,
  parseXRateLimit,
  readRateLimitHeaders,
} from './index.js';

const NOW = Date.UTC(2026, 0, 1, 12, 0, 0);

describe('RateLimit-Policy (draft-11)', () => {
  it('reads several policies with q, w, qu and pk', () => {
    expect(
      parseRateLimitPolicy('"burst";q=100;w=60, "daily";q=1000;w=86400;qu="content-bytes";pk=:AQID:'),
    ).toEqual([
      { name: 'burst', quota: 100, windowSeconds: 60, quotaUnit: 'requests', partitionKey: undefined },
      { name: 'daily', quota: 1000, windowSeconds: 86400, quotaUnit: 'content-bytes', partitionKey: 'AQID' },
    ]);
  });

  it('accepts Token names and a missing window', () => {
    expect(parseRateLimitPolicy('default;q=10')).toEqual([
      {
        name: 'default',
        quota: 10,
        windowSeconds: undefined,
        quotaUnit: 'requests',
        partitionKey: undefined,
      },
    ]);
  });

  it('ignores a member without a valid q or with a bad w, and keeps the others', () => {
    const names = (v: string) => parseRateLimitPolicy(v).map((p) => p.name);
    expect(names('"a";w=60, "b";q=5;w=60')).toEqual(['b']);
    expect(names('"a";q=-1, "b";q=1.5, "c";q="7", "d";q=7')).toEqual(['d']);
    expect(names('"a";q=5;w=0, "b";q=5;w=?1, "c";q=5;w=60')).toEqual(['c']);
    expect(names('10;w=1, ("x" "y");q=5, ?1;q=5, "ok";q=1')).toEqual(['ok']);
  });

  it('ignores the whole field when it is not a Structured Fields List', () => {
    for (const bad of [
      '"a";q=5, "b',
      'a;q=5,,b;q=1',
      '"a";q=5;',
      '"unterminated;q=5',
      'ü;q=1',
      '"a";q=5 "b";q=1',
    ]) {
      expect(parseRateLimitPolicy(bad)).toEqual([]);
    }
  });

  it('unknown parameters are ignored', () => {
    expect(parseRateLimitPolicy('"a";q=5;zz=1;w=60')[0]).toMatchObject({ quota: 5, windowSeconds: 60 });
  });
});

describe('RateLimit (draft-11)', () => {
  it('reads several states', () => {
    expect(parseRateLimit('"burst";r=17;t=42, "daily";r=870;t=3600')).toEqual([
      { name: 'burst', remaining: 17, resetSeconds: 42, partitionKey: undefined },
      { name: 'daily', remaining: 870, resetSeconds: 3600, partitionKey: undefined },
    ]);
  });

  it('ignores members without r or with a bad t, and malformed fields whole', () => {
    expect(parseRateLimit('"a";t=4, "b";r=3;t=-1, "c";r=2').map((s) => s.name)).toEqual(['c']);
    expect(parseRateLimit('"a";r=2, "b";r=')).toEqual([]);
    expect(parseRateLimit('')).toEqual([]);
    expect(parseRateLimit(null)).toEqual([]);
  });

  it('the last member of a name wins', () => {
    expect(parseRateLimit('"a";r=1, "a";r=2')).toEqual([
      { name: 'a', remaining: 2, resetSeconds: undefined, partitionKey: undefined },
    ]);
  });
});

describe('older fields', () => {
  it('RateLimit-Limit/Remaining/Reset with an optional policy list in the limit', () => {
    expect(parseLegacyRateLimit('100, 100;w=60', '42', '17')).toEqual({
      quota: 100,
      windowSeconds: 60,
      remaining: 42,
      resetSeconds: 17,
    });
    expect(parseLegacyRateLimit('100', 'x', '-3')).toEqual({
      quota: 100,
      windowSeconds: undefined,
      remaining: undefined,
      resetSeconds: undefined,
    });
    expect(parseLegacyRateLimit(null, null, null)).toBeUndefined();
    expect(parseLegacyRateLimit('garbage"', '1.5', '')).toBeUndefined();
  });

  it('X-RateLimit-* with delta, epoch-second and epoch-millisecond resets', () => {
    const get = (reset: string, extra: Record<string, string> = {}) => {
      const h = new Headers({
        'X-RateLimit-Limit': '300',
        'X-RateLimit-Remaining': '295',
        'X-RateLimit-Reset': reset,
        ...extra,
      });
      return (name: string) => h.get(name);
    };
    expect(parseXRateLimit(get('30'), NOW)).toEqual({
      quota: 300,
      remaining: 295,
      resetSeconds: 30,
      policy: undefined,
    });
    expect(parseXRateLimit(get(String(NOW / 1000 + 45), { 'X-RateLimit-Policy': 'standard' }), NOW)).toEqual({
      quota: 300,
      remaining: 295,
      resetSeconds: 45,
      policy: 'standard',
    });
    expect(parseXRateLimit(get(String(NOW + 2500)), NOW)?.resetSeconds).toBe(3);
    expect(parseXRateLimit(get(String(NOW / 1000 - 100)), NOW)?.resetSeconds).toBe(0);
    expect(parseXRateLimit(get('soon'), NOW)?.resetSeconds).toBeUndefined();
    expect(parseXRateLimit(() => null, NOW)).toBeUndefined();
    expect(parseXRateLimit((n) => (n === 'x-ratelimit-remaining' ? '-1' : null), NOW)).toBeUndefined();
  });
});

describe('readRateLimitHeaders', () => {
  it('joins RateLimit with RateLimit-Policy by name and keeps policies without state', () => {
    const h = new Headers({
      'RateLimit-Policy': '"burst";q=100;w=60, "daily";q=1000;w=86400',
      RateLimit: '"burst";r=0;t=12',
    });
    expect(readRateLimitHeaders(h, NOW)).toEqual([
      {
        policy: 'burst',
        remaining: 0,
        quota: 100,
        windowSeconds: 60,
        quotaUnit: 'requests',
        resetSeconds: 12,
        form: 'ratelimit',
      },
      {
        policy: 'daily',
        remaining: undefined,
        quota: 1000,
        windowSeconds: 86400,
        quotaUnit: 'requests',
        resetSeconds: undefined,
        form: 'ratelimit',
      },
    ]);
  });

  it('reads repeated fields as one list (fetch joins them with a comma)', () => {
    const h = new Headers();
    h.append('RateLimit', '"a";r=1');
    h.append('RateLimit', '"b";r=2');
    expect(readRateLimitHeaders(h, NOW).map((o) => o.policy)).toEqual(['a', 'b']);
  });

  it('prefers draft-11 over the older forms, and those over X-RateLimit', () => {
    const all = {
      RateLimit: '"a";r=1;t=2',
      'RateLimit-Remaining': '5',
      'X-RateLimit-Remaining': '9',
    };
    expect(readRateLimitHeaders(new Headers(all), NOW)[0].form).toBe('ratelimit');
    const { RateLimit: _, ...older } = all;
    expect(readRateLimitHeaders(new Headers(older), NOW)[0]).toMatchObject({
      form: 'ratelimit-legacy',
      remaining: 5,
    });
    expect(readRateLimitHeaders(new Headers({ 'X-RateLimit-Remaining': '9' }), NOW)[0]).toMatchObject({
      form: 'x-ratelimit',
      remaining: 9,
      policy: '',
    });
  });

  it('falls back to older forms when the draft-11 fields are malformed', () => {
    const h = new Headers({ RateLimit: '"a";r=', 'X-RateLimit-Remaining': '9' });
    expect(readRateLimitHeaders(h, NOW)).toMatchObject([{ form: 'x-ratelimit', remaining: 9 }]);
  });

  it('returns nothing for a response without rate-limit fields', () => {
    expect(readRateLimitHeaders(new Headers({ 'Content-Type': 'text/plain' }), NOW)).toEqual([]);
  });
});

describe('Retry-After', () => {
  it('reads delay-seconds', () => {
    expect(parseRetryAfter('120', NOW)).toBe(120);
    expect(parseRetryAfter(' 0 ', NOW)).toBe(0);
    expect(parseRetryAfter(null, NOW)).toBeUndefined();
  });

  it('reads a delay-seconds too large to represent as 2^31 seconds (RFC 9111 section 1.2.2), not as malformed', () => {
    expect(parseRetryAfter('2147483647', NOW)).toBe(2147483647);
    expect(parseRetryAfter('2147483648', NOW)).toBe(2147483648);
    expect(parseRetryAfter('2147483649', NOW)).toBe(2147483648);
    expect(parseRetryAfter('9007199254740993', NOW)).toBe(2147483648);
    expect(parseRetryAfter('99999999999999999999', NOW)).toBe(2147483648);
    expect(parseRetryAfter('9'.repeat(400), NOW)).toBe(2147483648);
  });

  it('reads the three HTTP-date forms relative to now, a past date as 0', () => {
    expect(parseRetryAfter('Thu, 01 Jan 2026 12:00:30 GMT', NOW)).toBe(30);
    expect(parseRetryAfter('Thursday, 01-Jan-26 12:01:00 GMT', NOW)).toBe(60);
    expect(parseRetryAfter('Thu Jan  1 12:00:05 2026', NOW)).toBe(5);
    expect(parseRetryAfter('Thu, 01 Jan 2026 11:00:00 GMT', NOW)).toBe(0);
    expect(parseRetryAfter('Thu, 01 Jan 2026 12:00:00 GMT', NOW + 400)).toBe(0);
  });

  it('rejects what Date.parse would wrongly accept', () => {
    for (const bad of [
      '-5',
      '1.5',
      '1e3',
      '2030-01-01',
      'tomorrow',
      'Thu, 31 Feb 2026 12:00:00 GMT',
      'Thu, 01 Jan 2026 25:00:00 GMT',
      'Thu, 01 Jan 2026 12:00:00 UTC',
      '2026-01-01T12:00:30Z',
      '',
    ]) {
      expect(parseRetryAfter(bad, NOW), bad).toBeUndefined();
    }
  });

  it('reads RFC 850 two-digit years within 50 years of now', () => {
    expect(new Date(parseHttpDate('Sunday, 06-Nov-94 08:49:37 GMT', NOW) ?? 0).getUTCFullYear()).toBe(1994);
    expect(new Date(parseHttpDate('Monday, 06-Nov-73 08:49:37 GMT', NOW) ?? 0).getUTCFullYear()).toBe(2073);
  });
});

describe('property tests', () => {
  const anyText = fc.oneof(
    fc.string(),
    fc.string({ unit: 'binary' }),
    fc.stringMatching(/^[ "a-z0-9;=,:?*().-]{0,40}$/),
  );

  it('no parser ever throws, whatever the field values', () => {
    fc.assert(
      fc.property(anyText, anyText, anyText, fc.integer(), (a, b, c, now) => {
        parseRateLimitPolicy(a);
        parseRateLimit(a);
        parseLegacyRateLimit(a, b, c);
        parseRetryAfter(a, now);
        const headers = { get: (n: string) => (n.length % 3 === 0 ? a : n.length % 3 === 1 ? b : c) };
        const out = readRateLimitHeaders(headers, now);
        for (const o of out) {
          expect(o.remaining === undefined || (Number.isSafeInteger(o.remaining) && o.remaining >= 0)).toBe(
            true,
          );
          expect(o.resetSeconds === undefined || o.resetSeconds >= 0).toBe(true);
        }
      }),
      { numRuns: 2000 },
    );
  });

  const name = fc.stringMatching(/^[a-z][a-z0-9._-]{0,15}$/);
  const nonNeg = fc.integer({ min: 0, max: 999_999_999_999_999 });

  it('reads back every valid RateLimit list a server can serialize', () => {
    fc.assert(
      fc.property(
        fc.uniqueArray(
          fc.record({ name, r: nonNeg, t: fc.option(nonNeg, { nil: undefined }), token: fc.boolean() }),
          {
            selector: (x) => x.name,
            minLength: 1,
            maxLength: 6,
          },
        ),
        (states) => {
          const items: Item[] = states.map((s) => [
            s.token ? new Token(s.name) : s.name,
            new Map<string, number>(
              s.t === undefined
                ? [['r', s.r]]
                : [
                    ['r', s.r],
                    ['t', s.t],
                  ],
            ),
          ]);
          expect(parseRateLimit(serializeList(items))).toEqual(
            states.map((s) => ({ name: s.name, remaining: s.r, resetSeconds: s.t, partitionKey: undefined })),
          );
        },
      ),
    );
  });

  it('a valid member survives any malformed neighbour member', () => {
    fc.assert(
      fc.property(
        name,
        nonNeg,
        fc.constantFrom('"x";t=1', '"y";r=-2', '"z";r="3"', '?0;r=1', '"w";r=1;t=1.5'),
        (n, r, bad) => {
          expect(parseRateLimit(`${bad}, "${n}";r=${r}`)).toEqual([
            { name: n, remaining: r, resetSeconds: undefined, partitionKey: undefined },
          ]);
        },
      ),
    );
  });

  it('delay-seconds round-trips and HTTP-dates give the difference in seconds', () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 10 ** 9 }), (s) => {
        expect(parseRetryAfter(String(s), NOW)).toBe(s);
        expect(parseRetryAfter(new Date(NOW + s * 1000).toUTCString(), NOW)).toBe(s);
      }),
    );
  });

  it('full jitter stays within [0, min(cap, initial x multiplier^n))', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 0, max: 50 }),
        fc.double({ min: 0.001, max: 100, noNaN: true }),
        fc.double({ min: 1, max: 10, noNaN: true }),
        fc.double({ min: 0.001, max: 3600, noNaN: true }),
        fc.double({ min: 0, max: 1, maxExcluded: true, noNaN: true }),
        (attempt, initial, multiplier, cap, r) => {
          const ms = fullJitterDelayMs(attempt, initial, multiplier, cap, () => r);
          expect(ms).toBeGreaterThanOrEqual(0);
          expect(ms).toBeLessThanOrEqual(Math.min(cap, initial * multiplier ** attempt) * 1000);
          expect(Number.isInteger(ms)).toBe(true);
        },
      ),
    );
  });
});
