import type { RateLimitEntry } from './rate-limit-state.js';

/** How close a policy is to its limit, as the status element shows it. */
export type StatusLevel =
  /** No usable state yet. */
  | 'unknown'
  /** At or above the warning fraction. */
  | 'ok'
  /** Below the warning fraction of the quota (the contract's "< 20% remaining"). */
  | 'warning'
  /** Nothing left until the reset. */
  | 'exhausted';

/** What the element displays for one entry at one instant. */
export interface StatusView {
  readonly level: StatusLevel;
  readonly remaining: number | undefined;
  readonly quota: number | undefined;
  /** Whole seconds until reset, rounded up; `undefined` when the server gave no reset. */
  readonly secondsToReset: number | undefined;
}

/**
 * The view of an entry at `now`: a reset that has passed restores the full quota (the draft's meaning of `t`),
 * and the level compares `remaining / quota` with `warnBelow`, strictly, so 20 of 100 is not below 20%.
 *
 * @param entry - the entry shown, or `undefined`.
 * @param now - the client's clock reading.
 * @param warnBelow - the warning fraction, 0.2 by default in the element.
 */
export function statusView(entry: RateLimitEntry | undefined, now: number, warnBelow: number): StatusView {
  if (entry === undefined || entry.remaining === undefined) {
    return { level: 'unknown', remaining: undefined, quota: entry?.quota, secondsToReset: undefined };
  }
  const secondsToReset =
    entry.resetAt === undefined ? undefined : Math.max(0, Math.ceil((entry.resetAt - now) / 1000));
  const remaining = secondsToReset === 0 && entry.quota !== undefined ? entry.quota : entry.remaining;
  const quota = entry.quota;
  let level: StatusLevel = 'ok';
  if (remaining === 0) level = 'exhausted';
  else if (quota !== undefined && quota > 0 && remaining / quota < warnBelow) level = 'warning';
  return { level, remaining, quota, secondsToReset };
}

/**
 * The most constrained entry: the lowest `remaining / quota` (lowest `remaining` when the quota is unknown),
 * among entries that know their remaining.
 */
export function mostConstrained(entries: readonly RateLimitEntry[]): RateLimitEntry | undefined {
  let best: RateLimitEntry | undefined;
  let bestRatio = Number.POSITIVE_INFINITY;
  for (const e of entries) {
    if (e.remaining === undefined) continue;
    const ratio = e.quota !== undefined && e.quota > 0 ? e.remaining / e.quota : e.remaining === 0 ? 0 : 1;
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
  /** The remaining count, for example `19 of 100 left`. */
  readonly remaining: (remaining: number, quota: number | undefined) => string;
  /** The countdown part, for example `resets in 42 s`. */
  readonly resetsIn: (countdown: string) => string;
  /** Shown once the reset time has passed. */
  readonly resetDone: string;
  /** Before any response has been seen. */
  readonly unknown: string;
  /** The visible warning badge below the threshold (text, so it never relies on colour). */
  readonly warning: string;
  /** The visible badge when nothing is left. */
  readonly exhausted: string;
  /** Announced by the live region on entering the warning level. */
  readonly announceWarning: (remaining: number, quota: number | undefined) => string;
  /** Announced on exhaustion. */
  readonly announceExhausted: (countdown: string | undefined) => string;
  /** Announced when the state leaves the warning or exhausted level. */
  readonly announceRestored: string;
}

/** The default English texts. */
export const DEFAULT_STATUS_MESSAGES: RateLimitStatusMessages = Object.freeze({
  label: 'Rate limit',
  remaining: (r: number, q: number | undefined) => (q === undefined ? `${r} left` : `${r} of ${q} left`),
  resetsIn: (c: string) => `resets in ${c}`,
  resetDone: 'reset',
  unknown: 'no data yet',
  warning: 'Low',
  exhausted: 'Limit reached',
  announceWarning: (r: number, q: number | undefined) =>
    `Approaching the rate limit: ${q === undefined ? r : `${r} of ${q}`} requests left.`,
  announceExhausted: (c: string | undefined) =>
    c === undefined ? 'Rate limit reached.' : `Rate limit reached. It resets in ${c}.`,
  announceRestored: 'Rate limit no longer low.',
});
