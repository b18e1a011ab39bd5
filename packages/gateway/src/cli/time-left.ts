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
