import {
  parseLegacyRateLimit,
  parseRateLimit,
  parseRateLimitPolicy,
  parseXRateLimit,
} from './rate-limit-fields.js';
import { parseHttpDate } from './retry-after.js';

/** Which family of fields an observation came from. */
export type RateLimitForm =
  /** `RateLimit` and `RateLimit-Policy` of draft-ietf-httpapi-ratelimit-headers-11 (Structured Fields). */
  | 'ratelimit'
  /** `RateLimit-Limit`, `RateLimit-Remaining`, `RateLimit-Reset` of drafts 00 to 06. */
  | 'ratelimit-legacy'
  /** `X-RateLimit-Limit`, `X-RateLimit-Remaining`, `X-RateLimit-Reset` (and `X-RateLimit-Policy`). */
  | 'x-ratelimit';

/** What one response said about one policy. Absent facts are `undefined`, never guessed. */
export interface RateLimitObservation {
  /** The policy name; `''` for the legacy forms, which name no policy (unless `X-RateLimit-Policy` does). */
  readonly policy: string;
  /** Quota units left. */
  readonly remaining: number | undefined;
  /** Quota units per window. */
  readonly quota: number | undefined;
  /** The window in seconds. */
  readonly windowSeconds: number | undefined;
  /** The quota unit, `requests` unless the server says otherwise. */
  readonly quotaUnit: string;
  /** Seconds from the response until the quota resets. */
  readonly resetSeconds: number | undefined;
  /** The fields it came from. */
  readonly form: RateLimitForm;
}

/** The subset of `Headers` the parser reads, so plain objects work in tests and other runtimes. */
export interface HeaderSource {
  get(name: string): string | null;
}

/**
 * The wall-clock time a response speaks of: its `Date` field when valid (so a client with a skewed clock still
 * reads dates as the server meant them), else the local wall clock.
 *
 * @param headers - the response headers.
 * @param wallNow - the local wall clock in epoch milliseconds.
 */
export function responseTime(headers: HeaderSource, wallNow: number): number {
  const date = headers.get('date');
  return (date === null ? undefined : parseHttpDate(date, wallNow)) ?? wallNow;
}

/**
 * Reads every rate-limit field form of a response into one observation per policy. The draft-11 fields win when
 * they yield anything, then the older `RateLimit-*` fields, then `X-RateLimit-*`: a server sending several
 * forms describes the same policies, and mixing them would count one policy twice. Malformed fields are ignored
 * (see {@link parseRateLimit}); the function never throws.
 *
 * @param headers - the response headers.
 * @param wallNowMs - the response's wall-clock time (see {@link responseTime}) for epoch forms of reset.
 * @returns the observations, empty when the response carries no usable rate-limit field.
 *
 * @example
 * ```ts
 * readRateLimitHeaders(new Headers({ 'RateLimit-Policy': '"api";q=100;w=60', RateLimit: '"api";r=42;t=18' }), Date.now());
 * // [{ policy: 'api', remaining: 42, quota: 100, windowSeconds: 60, resetSeconds: 18, quotaUnit: 'requests', form: 'ratelimit' }]
 * ```
 */
export function readRateLimitHeaders(headers: HeaderSource, wallNowMs: number): RateLimitObservation[] {
  const policies = parseRateLimitPolicy(headers.get('ratelimit-policy'));
  const states = parseRateLimit(headers.get('ratelimit'));
  if (policies.length > 0 || states.length > 0) {
    const byName = new Map(policies.map((p) => [p.name, p]));
    const out: RateLimitObservation[] = [];
    for (const s of states) {
      const p = byName.get(s.name);
      byName.delete(s.name);
      out.push({
        policy: s.name,
        remaining: s.remaining,
        quota: p?.quota,
        windowSeconds: p?.windowSeconds,
        quotaUnit: p?.quotaUnit ?? 'requests',
        resetSeconds: s.resetSeconds,
        form: 'ratelimit',
      });
    }
    // A policy announced without a state did not apply to this request; its shape is still worth keeping.
    for (const p of byName.values()) {
      out.push({
        policy: p.name,
        remaining: undefined,
        quota: p.quota,
        windowSeconds: p.windowSeconds,
        quotaUnit: p.quotaUnit,
        resetSeconds: undefined,
        form: 'ratelimit',
      });
    }
    return out;
  }
  const legacy = parseLegacyRateLimit(
    headers.get('ratelimit-limit'),
    headers.get('ratelimit-remaining'),
    headers.get('ratelimit-reset'),
  );
  if (legacy !== undefined) {
    return [{ policy: '', ...legacy, quotaUnit: 'requests', form: 'ratelimit-legacy' }];
  }
  const x = parseXRateLimit((name) => headers.get(name), wallNowMs);
  if (x !== undefined) {
    return [
      {
        policy: x.policy ?? '',
        remaining: x.remaining,
        quota: x.quota,
        windowSeconds: undefined,
        quotaUnit: 'requests',
        resetSeconds: x.resetSeconds,
        form: 'x-ratelimit',
      },
    ];
  }
  return [];
}
