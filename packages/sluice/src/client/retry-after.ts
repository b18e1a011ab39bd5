const DELAY_SECONDS = /^\d+$/;
/** The value RFC 9111 section 1.2.2 gives a delta-seconds that overflows: 2^31 seconds. */
const MAX_DELTA_SECONDS = 2_147_483_648;
const DAY = '(Mon|Tue|Wed|Thu|Fri|Sat|Sun)';
const MONTH = '(Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec)';
const TIME = '(\\d{2}):(\\d{2}):(\\d{2})';
// RFC 9110 section 5.6.7: IMF-fixdate is what servers send; recipients must also accept the two obsolete forms.
const IMF_FIXDATE = new RegExp(`^${DAY}, (\\d{2}) ${MONTH} (\\d{4}) ${TIME} GMT$`);
const RFC850 = new RegExp(
  `^(Monday|Tuesday|Wednesday|Thursday|Friday|Saturday|Sunday), (\\d{2})-${MONTH}-(\\d{2}) ${TIME} GMT$`,
);
const ASCTIME = new RegExp(`^${DAY} ${MONTH} ([ \\d]\\d) ${TIME} (\\d{4})$`);
const MONTHS = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec'];

/**
 * Parses an HTTP-date in any of the three forms of RFC 9110 (IMF-fixdate, RFC 850, asctime), strictly: unlike
 * `Date.parse`, text such as `"1"` or `"2030"` is no date, and asctime is read as UTC.
 *
 * @param value - the field value, surrounding whitespace allowed.
 * @param nowMs - the current wall-clock time in milliseconds since the epoch; resolves RFC 850 two-digit years.
 * @returns milliseconds since the epoch, or `undefined` when the value is not a valid HTTP-date.
 */
export function parseHttpDate(value: string, nowMs: number = Date.now()): number | undefined {
  const text = value.trim();
  let m = IMF_FIXDATE.exec(text);
  if (m !== null) return utc(Number(m[4]), m[3], Number(m[2]), m[5], m[6], m[7]);
  m = RFC850.exec(text);
  if (m !== null) {
    // RFC 9110: a two-digit year more than 50 years in the future means the most recent past year with those digits.
    const nowYear = new Date(nowMs).getUTCFullYear();
    let year = Math.floor(nowYear / 100) * 100 + Number(m[4]);
    if (year > nowYear + 50) year -= 100;
    return utc(year, m[3], Number(m[2]), m[5], m[6], m[7]);
  }
  m = ASCTIME.exec(text);
  if (m !== null) return utc(Number(m[7]), m[2], Number(m[3].trim()), m[4], m[5], m[6]);
  return undefined;
}

function utc(
  year: number,
  month: string,
  day: number,
  h: string,
  min: string,
  s: string,
): number | undefined {
  const mon = MONTHS.indexOf(month);
  const hour = Number(h);
  const minute = Number(min);
  // A leap second (60) is a real instant; it is read as the second before so it still names a valid time.
  const second = Math.min(Number(s), 59);
  if (hour > 23 || minute > 59 || Number(s) > 60 || day < 1) return undefined;
  const ms = Date.UTC(year, mon, day, hour, minute, second);
  // Date.UTC rolls 31 Feb over into March; a date that does not round-trip does not exist.
  if (new Date(ms).getUTCDate() !== day) return undefined;
  return ms;
}

/**
 * Reads a `Retry-After` field (RFC 9110 section 10.2.3) in either form: delay-seconds (`120`) or an HTTP-date.
 *
 * A date is compared with the response's own `Date` field when there is one, so a client whose clock is off
 * still waits what the server meant; without it the local wall clock stands in.
 *
 * @param value - the field value, or `null` when the response has none.
 * @param nowMs - the wall-clock time to measure a date form against: the response's `Date`, else the local clock.
 * @returns whole seconds to wait (0 for a date in the past; at most 2^31, which a larger delay-seconds reads as),
 *   or `undefined` when absent or malformed; a malformed value is ignored rather than trusted, so the client falls
 *   back to its own backoff.
 *
 * @example
 * ```ts
 * parseRetryAfter('30', Date.now()); // 30
 * parseRetryAfter('Wed, 21 Oct 2015 07:28:30 GMT', Date.parse('Wed, 21 Oct 2015 07:28:00 GMT')); // 30
 * ```
 */
export function parseRetryAfter(value: string | null | undefined, nowMs: number): number | undefined {
  if (value === null || value === undefined) return undefined;
  const text = value.trim();
  if (DELAY_SECONDS.test(text)) {
    // RFC 9111 section 1.2.2: a delta-seconds too large to represent counts as 2^31, not as malformed, so a
    // huge valid delay still ends at once above the cap instead of a retry after the short backoff.
    const seconds = Number(text);
    return Number.isSafeInteger(seconds) && seconds <= MAX_DELTA_SECONDS ? seconds : MAX_DELTA_SECONDS;
  }
  const at = parseHttpDate(text, nowMs);
  if (at === undefined) return undefined;
  return Math.max(0, Math.ceil((at - nowMs) / 1000));
}
