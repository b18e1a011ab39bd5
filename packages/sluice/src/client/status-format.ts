import { bucketAt } from './bucket-estimate.js';
import type { RateLimitEntry } from './rate-limit-state.js';

/** How close a policy is to its limit, as the status element shows it. */
export type StatusLevel =
  /** No usable state yet. */
  | 'unknown'
  /** At or above the warning fraction. */
  | 'ok'
  /** Below the warning fraction of what the bucket holds (the console's "< 20% remaining"). */
  | 'warning'
  /** No request passes until the next token. */
  | 'exhausted';

/** What the element displays for one entry at one instant. */
export interface StatusView {
  readonly level: StatusLevel;
  /** Whole requests that pass now, at least. */
  readonly remaining: number | undefined;
  /** What the bucket holds when full, at least (the burst; not the quota per window). */
  readonly capacity: number | undefined;
  /** Whole seconds until the next request passes, rounded up; 0 when one passes now. */
  readonly secondsToNext: number | undefined;
  /** Whole seconds until the bucket is full, rounded up; 0 when it is; `undefined` when the server gave no `t`. */
  readonly secondsToFull: number | undefined;
}

const secondsUntil = (at: number | undefined, now: number) =>
  at === undefined ? undefined : Math.max(0, Math.ceil((at - now) / 1000));

/**
 * The view of an entry at `now` (see `bucketAt`): what is left against what the bucket can hold, when the next
 * request passes and when the bucket is full. The level compares `remaining / capacity` with `warnBelow`,
 * strictly, so 10 of 50 is not below 20%.
 *
 * @param entry - the entry shown, or `undefined`.
 * @param now - the client's clock reading.
 * @param warnBelow - the warning fraction, 0.2 by default in the element.
 */
export function statusView(entry: RateLimitEntry | undefined, now: number, warnBelow: number): StatusView {
  const b = entry === undefined ? undefined : bucketAt(entry, now);
  if (b?.left === undefined) {
    return {
      level: 'unknown',
      remaining: undefined,
      capacity: b?.capacity,
      secondsToNext: undefined,
      secondsToFull: undefined,
    };
  }
  const { left, capacity } = b;
  let level: StatusLevel = 'ok';
  if (left === 0) level = 'exhausted';
  else if (capacity !== undefined && left / capacity < warnBelow) level = 'warning';
  return {
    level,
    remaining: left,
    capacity,
    secondsToNext: secondsUntil(b.nextAt, now),
    secondsToFull: secondsUntil(b.fullAt, now),
  };
}

/**
 * When the view of `entry` next changes its displayed seconds or reaches a countdown's end, so a display can sleep
 * until then instead of polling: the bucket's count refills in between and is refreshed at these instants.
 *
 * @returns a clock reading after `now`, or `undefined` once the bucket is full (nothing changes until a response).
 */
export function nextChangeAt(entry: RateLimitEntry | undefined, now: number): number | undefined {
  if (entry === undefined) return undefined;
  const b = bucketAt(entry, now);
  let at: number | undefined;
  for (const target of [b.nextAt, b.fullAt]) {
    if (target === undefined || !(target > now)) continue;
    // The displayed countdown ceil((target - now) / 1000) steps down at target - 1000 k.
    const step = now + ((target - now) % 1000 || 1000);
    at = at === undefined ? step : Math.min(at, step);
  }
  return at;
}

/**
 * The most constrained entry at `now`: the lowest share of its capacity left (when the capacity is unknown, an
 * empty one counts as 0 and any other as 1), among entries that know their remaining.
 */
export function mostConstrained(entries: readonly RateLimitEntry[], now: number): RateLimitEntry | undefined {
  let best: RateLimitEntry | undefined;
  let bestRatio = Number.POSITIVE_INFINITY;
  for (const e of entries) {
    const { left, capacity } = bucketAt(e, now);
    if (left === undefined) continue;
    const ratio = capacity !== undefined ? left / capacity : left === 0 ? 0 : 1;
    if (best === undefined || ratio < bestRatio) {
      best = e;
      bestRatio = ratio;
    }
  }
  return best;
}

/** A countdown as people read it: `42 s`, `4:05`, `1:00:00`. */
export function formatCountdown(seconds: number): string {
  if (seconds < 60) return `${seconds} s`;
  const h = Math.floor(seconds / 3600);
  const m = Math.floor((seconds % 3600) / 60);
  const s = String(seconds % 60).padStart(2, '0');
  return h > 0 ? `${h}:${String(m).padStart(2, '0')}:${s}` : `${m}:${s}`;
}

/** The element's texts; every one can be replaced (language, product wording). */
export interface RateLimitStatusMessages {
  /** The visible label and the group's accessible name. Default `Rate limit`. */
  readonly label: string;
  /** The requests left against what the bucket holds, for example `49 of 50 left`. */
  readonly remaining: (remaining: number, capacity: number | undefined) => string;
  /** When no request passes now: `next request in 4 s`. */
  readonly nextIn: (countdown: string) => string;
  /** Until the bucket holds its capacity again: `full in 10 s`. */
  readonly fullIn: (countdown: string) => string;
  /** Shown once the bucket is full. */
  readonly full: string;
  /** Before any response has been seen. */
  readonly unknown: string;
  /** The visible warning badge below the threshold (text, so it never relies on colour). */
  readonly warning: string;
  /** The visible badge when nothing is left. */
  readonly exhausted: string;
  /** Announced by the live region on entering the warning level. */
  readonly announceWarning: (remaining: number, capacity: number | undefined) => string;
  /** Announced on exhaustion, with the countdown to the next request when known. */
  readonly announceExhausted: (nextCountdown: string | undefined) => string;
  /** Announced when the state leaves the warning or exhausted level. */
  readonly announceRestored: string;
}

/** The default English texts. */
export const DEFAULT_STATUS_MESSAGES: RateLimitStatusMessages = Object.freeze({
  label: 'Rate limit',
  remaining: (r: number, c: number | undefined) => (c === undefined ? `${r} left` : `${r} of ${c} left`),
  nextIn: (c: string) => `next request in ${c}`,
  fullIn: (c: string) => `full in ${c}`,
  full: 'full',
  unknown: 'no data yet',
  warning: 'Low',
  exhausted: 'Limit reached',
  announceWarning: (r: number, c: number | undefined) =>
    `Approaching the rate limit: ${c === undefined ? r : `${r} of ${c}`} requests left.`,
  announceExhausted: (c: string | undefined) =>
    c === undefined ? 'Rate limit reached.' : `Rate limit reached. The next request passes in ${c}.`,
  announceRestored: 'Rate limit no longer low.',
});
