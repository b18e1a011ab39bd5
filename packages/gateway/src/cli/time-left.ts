import { parseZonedTime } from 'sluice';

/**
 * The seconds until a rule ends, as the dashboard's "Overrides and blocks" panel counts them down: `2 h 05 min`,
 * `4 min 09 s`, `9 s`; `ended` at zero. `sluice override list` shows the same words, so the two read alike.
 *
 * @param seconds - whole seconds left.
 * @returns the time left in words.
 *
 * @example
 * ```ts
 * timeLeft(3591); // '59 min 51 s'
 * ```
 */
export function timeLeft(seconds: number): string {
  if (seconds <= 0) return 'ended';
  const hrs = Math.floor(seconds / 3600);
  const min = Math.floor((seconds % 3600) / 60);
  const sec = seconds % 60;
  if (hrs > 0) return `${hrs} h ${String(min).padStart(2, '0')} min`;
  if (min > 0) return `${min} min ${String(sec).padStart(2, '0')} s`;
  return `${sec} s`;
}

/**
 * Why a `--until` value is refused, or `undefined` for a date-time the gateway reads as one instant. A time
 * without `Z` or an offset is refused: `Date.parse` reads it in the local time of the machine that parses it
 * (the gateway's, not the operator's), so a block would end hours early or late; a date alone is refused too,
 * since a person reads it as local midnight and `Date.parse` as UTC. A day the month does not have (`02-30`) is
 * refused rather than rolled over.
 *
 * @param value - the option's value as given.
 * @returns the usage message, naming the option, the form expected and the value given.
 *
 * @example
 * ```ts
 * untilIssue('2030-01-01T00:00:00Z'); // undefined
 * untilIssue('2030-01-01T00:00');     // '--until must be a date-time with Z or an offset from UTC, ...'
 * ```
 */
export function untilIssue(value: string): string | undefined {
  if (Number.isFinite(parseZonedTime(value))) return undefined;
  // A duration here is most likely meant for --for, which takes it.
  const hint = /^\d+(?:\.\d+)?(?:ms|s|m|h|d)$/.test(value) ? ` (for a duration, use --for ${value})` : '';
  return `--until must be a date-time with Z or an offset from UTC, such as 2030-01-01T00:00:00Z or 2030-01-01T02:00:00+02:00, got ${JSON.stringify(value)}${hint}`;
}
