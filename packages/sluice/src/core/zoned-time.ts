/** An ISO 8601 date-time with its offset from UTC: `Z` or `+02:00` (or `+0200`); seconds and fractions optional. */
const ZONED_TIME =
  /^(\d{4})-(\d{2})-(\d{2})[Tt]([01]\d|2[0-3]):([0-5]\d)(?::([0-5]\d)(?:\.\d{1,9})?)?(?:[Zz]|[+-](?:[01]\d|2[0-3]):?[0-5]\d)$/;

/**
 * Reads an ISO 8601 date-time that names one instant: with `Z` or an offset from UTC. `Date.parse` reads a time
 * without one in the local time of the machine that parses it (a gateway's, not the operator's), and a date alone
 * as UTC midnight where a person means local midnight, so both are refused here; so is a day the month does not
 * have (`2026-02-30`), which `Date` would roll over.
 *
 * @param text - the date-time as given.
 * @returns epoch milliseconds, or `NaN` when `text` is not such a date-time.
 *
 * @example
 * ```ts
 * parseZonedTime('2030-01-01T02:00:00+02:00'); // 1893456000000
 * parseZonedTime('2030-01-01T00:00');          // NaN: no zone
 * ```
 */
export function parseZonedTime(text: string): number {
  const m = ZONED_TIME.exec(text);
  if (m === null) return Number.NaN;
  const [year, month, day] = [Number(m[1]), Number(m[2]), Number(m[3])];
  const date = new Date(Date.UTC(year, month - 1, day));
  if (date.getUTCMonth() !== month - 1 || date.getUTCDate() !== day) return Number.NaN;
  return Date.parse(text);
}
