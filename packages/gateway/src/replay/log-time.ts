/*
 * Timestamps of access logs, parsed without a regular expression or a Date object per line: the day (or the
 * minute) of the previous line is kept, and a line of the same day costs a few character reads and additions.
 */

const MONTHS: Readonly<Record<string, number>> = Object.freeze({
  Jan: 0,
  Feb: 1,
  Mar: 2,
  Apr: 3,
  May: 4,
  Jun: 5,
  Jul: 6,
  Aug: 7,
  Sep: 8,
  Oct: 9,
  Nov: 10,
  Dec: 11,
});

/** The two digits at `at` as a number, or -1 when either is not a digit. */
function digits2(s: string, at: number): number {
  const a = s.charCodeAt(at) - 48;
  const b = s.charCodeAt(at + 1) - 48;
  return a >= 0 && a <= 9 && b >= 0 && b <= 9 ? a * 10 + b : -1;
}

function digits4(s: string, at: number): number {
  const a = digits2(s, at);
  const b = digits2(s, at + 2);
  return a < 0 || b < 0 ? -1 : a * 100 + b;
}

/** Milliseconds of a `+HHMM`, `+HH:MM` or `Z` zone at `at` (east of UTC positive), or NaN. */
function zoneMs(s: string, at: number, end: number): number {
  if (at >= end) return 0; // no zone: UTC, as the gateway's own and most JSON logs write
  const c = s.charCodeAt(at);
  if (c === 90 /* Z */ || c === 122 /* z */) return at + 1 === end ? 0 : Number.NaN;
  if (c !== 43 /* + */ && c !== 45 /* - */) return Number.NaN;
  const h = digits2(s, at + 1);
  const colon = s.charCodeAt(at + 3) === 58 ? 1 : 0;
  const m = digits2(s, at + 3 + colon);
  if (h < 0 || m < 0 || at + 5 + colon !== end) return Number.NaN;
  return (c === 43 ? 1 : -1) * (h * 60 + m) * 60_000;
}

/**
 * Parses the `[day/Mon/year:hour:minute:second zone]` time of NGINX and Apache logs
 * (`10/Oct/2000:13:55:36 -0700`), caching the day of the previous line.
 */
export class ClfTimeParser {
  readonly #day = new Uint16Array(17);
  #dayMs = Number.NaN;
  /** The 26 characters of the previous line's time; `#secondMs` is NaN until one was read. */
  readonly #second = new Uint16Array(26);
  #secondMs = Number.NaN;

  /**
   * @param s - the line.
   * @param at - where the time starts (after `[`).
   * @returns Unix milliseconds, or NaN when the text is not such a time.
   */
  parse(s: string, at: number): number {
    if (s.length < at + 26) return Number.NaN;
    // Most lines share their second with the line before. Compared character by character from the seconds
    // backwards (where consecutive times differ first): `startsWith` on a line cut from a larger chunk took a
    // fifth of a microsecond.
    if (!Number.isNaN(this.#secondMs) && this.#sameSecond(s, at)) return this.#secondMs;
    const t = this.#parse(s, at);
    if (!Number.isNaN(t)) {
      for (let i = 0; i < 26; i++) this.#second[i] = s.charCodeAt(at + i);
      this.#secondMs = t;
    }
    return t;
  }

  #sameSecond(s: string, at: number): boolean {
    const second = this.#second;
    for (let i = 19; i >= 0; i--) if (s.charCodeAt(at + i) !== second[i]) return false;
    for (let i = 20; i < 26; i++) if (s.charCodeAt(at + i) !== second[i]) return false;
    return true;
  }

  #parse(s: string, at: number): number {
    const day = this.#day;
    let same = !Number.isNaN(this.#dayMs);
    for (let i = 0; same && i < 11; i++) if (s.charCodeAt(at + i) !== day[i]) same = false;
    for (let i = 0; same && i < 6; i++) if (s.charCodeAt(at + 20 + i) !== day[11 + i]) same = false;
    if (!same && !this.#newDay(s, at)) return Number.NaN;
    const h = digits2(s, at + 12);
    const m = digits2(s, at + 15);
    const sec = digits2(s, at + 18);
    if (
      h < 0 ||
      h > 23 ||
      m < 0 ||
      m > 59 ||
      sec < 0 ||
      sec > 60 ||
      s.charCodeAt(at + 11) !== 58 ||
      s.charCodeAt(at + 14) !== 58 ||
      s.charCodeAt(at + 17) !== 58
    )
      return Number.NaN;
    return this.#dayMs + ((h * 60 + m) * 60 + sec) * 1000;
  }

  #newDay(s: string, at: number): boolean {
    const d = digits2(s, at);
    const month = MONTHS[s.slice(at + 3, at + 6)];
    const y = digits4(s, at + 7);
    const zone = zoneMs(s, at + 21, at + 26);
    if (
      d < 1 ||
      d > 31 ||
      month === undefined ||
      y < 0 ||
      Number.isNaN(zone) ||
      s.charCodeAt(at + 20) !== 32
    ) {
      this.#dayMs = Number.NaN;
      return false;
    }
    this.#dayMs = Date.UTC(y, month, d) - zone;
    for (let i = 0; i < 11; i++) this.#day[i] = s.charCodeAt(at + i);
    for (let i = 0; i < 6; i++) this.#day[11 + i] = s.charCodeAt(at + 20 + i);
    return true;
  }
}

/**
 * Parses ISO 8601 date-times as logs write them (`2026-12-03T06:38:27Z`, `2026-12-03T06:38:27.123+01:00`, a space
 * instead of the `T`, no zone meaning UTC), caching the minute of the previous value.
 */
export class IsoTimeParser {
  #minute = '';
  #minuteMs = Number.NaN;

  /**
   * @param s - the text holding the time.
   * @param at - where it starts.
   * @param end - where it ends (exclusive).
   * @returns Unix milliseconds, or NaN when the text is not such a time.
   */
  parse(s: string, at = 0, end = s.length): number {
    if (end - at < 19) return Number.NaN;
    const sep = s.charCodeAt(at + 10);
    if (
      s.charCodeAt(at + 4) !== 45 ||
      s.charCodeAt(at + 7) !== 45 ||
      (sep !== 84 && sep !== 32 && sep !== 116) ||
      s.charCodeAt(at + 13) !== 58 ||
      s.charCodeAt(at + 16) !== 58
    )
      return Number.NaN;
    const sec = digits2(s, at + 17);
    if (sec < 0 || sec > 60) return Number.NaN;
    let i = at + 19;
    let frac = 0;
    if (i < end && s.charCodeAt(i) === 46 /* . */) {
      let scale = 100;
      i++;
      const from = i;
      for (; i < end; i++) {
        const c = s.charCodeAt(i) - 48;
        if (c < 0 || c > 9) break;
        frac += c * scale;
        scale /= 10;
      }
      if (i === from) return Number.NaN;
    }
    const zone = zoneMs(s, i, end);
    if (Number.isNaN(zone)) return Number.NaN;
    if (this.#minute.length !== 16 || !s.startsWith(this.#minute, at)) {
      const y = digits4(s, at);
      const mo = digits2(s, at + 5);
      const d = digits2(s, at + 8);
      const h = digits2(s, at + 11);
      const mi = digits2(s, at + 14);
      if (y < 0 || mo < 1 || mo > 12 || d < 1 || d > 31 || h < 0 || h > 23 || mi < 0 || mi > 59)
        return Number.NaN;
      this.#minute = s.slice(at, at + 16);
      this.#minuteMs = Date.UTC(y, mo - 1, d, h, mi);
    }
    return this.#minuteMs + sec * 1000 + Math.floor(frac) - zone;
  }
}

/**
 * The largest number read as Unix milliseconds, and the bound of seconds (times 1000): the year 5138. A log
 * holds no later time, and a value beyond it is no time of this kind (microseconds or nanoseconds since the
 * epoch, a counter); read as milliseconds it would be a date tens of thousands of years ahead, or beyond what a
 * Date holds (8.64e15), whose report would throw.
 */
export const MAX_EPOCH_MS = 1e14;

/**
 * Unix seconds or milliseconds as a number: a value below 10^11 is taken as seconds (NGINX `$msec`, fractions
 * allowed), a larger one below {@link MAX_EPOCH_MS} as milliseconds. Both ranges end in the same year.
 *
 * @returns milliseconds, or NaN for a value that is not a finite, non-negative number within those ranges.
 */
export function epochMs(n: number): number {
  if (!(n >= 0 && n < MAX_EPOCH_MS)) return Number.NaN;
  return n < 1e11 ? Math.round(n * 1000) : Math.round(n);
}

/** Parses any time a JSON log may hold: ISO text, the NGINX time, or epoch seconds or milliseconds. */
export class AnyTimeParser {
  readonly #iso = new IsoTimeParser();
  readonly #clf = new ClfTimeParser();

  /**
   * @param v - the field's value.
   * @returns Unix milliseconds, or NaN when the value is no time.
   */
  parse(v: unknown): number {
    if (typeof v === 'number') return epochMs(v);
    if (typeof v !== 'string' || v.length === 0) return Number.NaN;
    if (v.charCodeAt(4) === 45) return this.#iso.parse(v);
    if (v.charCodeAt(2) === 47) return this.#clf.parse(v, 0);
    if (v.charCodeAt(0) === 91 && v.charCodeAt(3) === 47) return this.#clf.parse(v, 1);
    const n = Number(v);
    return v.trim() === '' ? Number.NaN : epochMs(n);
  }
}
