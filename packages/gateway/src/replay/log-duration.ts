/**
 * The duration of a request as access logs write it, read into milliseconds for the replay of concurrency limits.
 * A number with a decimal point is seconds (NGINX `$request_time`, `0.123`); a whole number is in the unit its
 * format writes whole numbers in (Apache `%D` microseconds, Envoy `%DURATION%` milliseconds), unless the caller
 * names the unit.
 */

import { ErrorCode, SluiceError } from 'sluice';

/** The unit of a whole-number duration: `s` (Apache `%T`), `ms` (Envoy `%DURATION%`), `us` (Apache `%D`). */
export type DurationUnit = 's' | 'ms' | 'us';

/** The units `--duration-unit` takes. */
export const DURATION_UNITS: readonly DurationUnit[] = ['s', 'ms', 'us'];

/**
 * Checks a `--duration-unit` value.
 *
 * @returns the unit, or `undefined` when not given (each format's own).
 * @throws SluiceError `ERR_INVALID_OPTION` naming `--duration-unit`, the units and the value given.
 */
export function durationUnit(value: string | undefined): DurationUnit | undefined {
  if (value === undefined) return undefined;
  if ((DURATION_UNITS as readonly string[]).includes(value)) return value as DurationUnit;
  throw new SluiceError(
    ErrorCode.InvalidOption,
    `--duration-unit must be ${DURATION_UNITS.slice(0, -1).join(', ')} or ${DURATION_UNITS[DURATION_UNITS.length - 1]} (the unit of a whole-number duration), got ${JSON.stringify(value)}`,
    { option: '--duration-unit' },
  );
}

/** Milliseconds per unit. */
const MS_PER: Readonly<Record<DurationUnit, number>> = { s: 1000, ms: 1, us: 0.001 };

/** The longest duration read (a day): a larger one is a broken field, not a request. */
const MAX_DURATION_MS = 86_400_000;

/**
 * The duration written from `from` to `to` (exclusive) in `s`, in milliseconds, or -1 when the text is no
 * duration (`-`, empty, a letter, more than a day).
 *
 * @param unit - the unit of a whole number; a number with a decimal point is seconds whatever it is.
 */
export function durationAt(s: string, from: number, to: number, unit: DurationUnit): number {
  if (to <= from || to - from > 20) return -1;
  let whole = 0;
  let frac = 0;
  let scale = 1;
  let dot = false;
  for (let i = from; i < to; i++) {
    const c = s.charCodeAt(i);
    if (c === 46 /* . */ && !dot && i > from) {
      dot = true;
      continue;
    }
    if (c < 48 || c > 57) return -1;
    if (dot) {
      scale /= 10;
      frac += (c - 48) * scale;
    } else whole = whole * 10 + (c - 48);
  }
  const ms = dot ? (whole + frac) * 1000 : whole * MS_PER[unit];
  return ms > MAX_DURATION_MS ? -1 : ms;
}

/**
 * A JSON log's duration field in milliseconds, or -1 when it is none: a number or its text; text with a decimal
 * point is seconds (NGINX writes `$request_time` so), any other value is in `unit`.
 */
export function durationOf(v: unknown, unit: DurationUnit): number {
  if (typeof v === 'string') return durationAt(v, 0, v.length, unit);
  if (typeof v !== 'number' || !Number.isFinite(v) || v < 0) return -1;
  const ms = Number.isInteger(v) ? v * MS_PER[unit] : v * 1000;
  return ms > MAX_DURATION_MS ? -1 : ms;
}

/**
 * The unit of a JSON duration field by its name: NGINX's `request_time` and names ending in `_s` or `seconds` are
 * seconds, names ending in `_us` or `micros` microseconds, any other (Envoy's `duration`, `duration_ms`)
 * milliseconds.
 */
export function jsonDurationUnit(name: string): DurationUnit {
  const n = name.toLowerCase();
  if (n.endsWith('request_time') || n.endsWith('_s') || n.endsWith('seconds')) return 's';
  if (n.endsWith('_us') || n.endsWith('micros') || n.endsWith('microseconds')) return 'us';
  return 'ms';
}

/**
 * The duration field a `combined` or `common` line carries after its fixed fields (NGINX `... "$http_user_agent"
 * $request_time`, Apache `%D` or `%T` at the end of the format), in milliseconds, or -1 when there is none.
 *
 * @param s - the line.
 * @param afterStatus - the space after the status (the byte count follows it).
 * @param unit - the unit of a whole number (microseconds: Apache `%D`).
 */
export function clfDuration(s: string, afterStatus: number, unit: DurationUnit): number {
  // The byte count, then the quoted referer and user agent of `combined`, then the duration.
  let i = s.indexOf(' ', afterStatus + 1);
  if (i < 0) return -1;
  for (let quoted = 0; quoted < 2 && s.charCodeAt(i + 1) === 34; quoted++) {
    const close = s.indexOf('"', i + 2);
    if (close < 0) return -1;
    i = close + 1;
    if (s.charCodeAt(i) !== 32) return -1;
  }
  let end = s.indexOf(' ', i + 1);
  if (end < 0) end = s.length;
  while (end > i + 1 && s.charCodeAt(end - 1) <= 32) end--;
  return durationAt(s, i + 1, end, unit);
}

/**
 * The duration of Envoy's default format in milliseconds (`%DURATION%`, the fifth field after the request line:
 * status, flags, bytes received, bytes sent, duration), or -1 when it is `-` or missing.
 *
 * @param afterRequest - where the request line's closing quote is.
 */
export function envoyDuration(s: string, afterRequest: number): number {
  let i = afterRequest + 1;
  for (let field = 0; field < 4; field++) {
    i = s.indexOf(' ', i + 1);
    if (i < 0) return -1;
  }
  const end = s.indexOf(' ', i + 1);
  return durationAt(s, i + 1, end < 0 ? s.length : end, 'ms');
}

/** Each path of a field map's `duration` with the unit its name says, built once per map. */
const jsonDurations = new WeakMap<
  object,
  readonly { readonly paths: readonly (readonly string[])[]; readonly unit: DurationUnit }[]
>();

/**
 * The duration of one parsed JSON line in milliseconds, from the first of `paths` present (`--field duration=PATH`,
 * else the common names), in the unit its name says ({@link jsonDurationUnit}); -1 when none is there.
 *
 * @param pick - reads the value at the first present path of a list.
 * @param unit - `--duration-unit`: the unit of a whole number whatever the field's name.
 */
export function jsonDuration(
  o: unknown,
  paths: readonly (readonly string[])[],
  pick: (o: unknown, paths: readonly (readonly string[])[]) => unknown,
  unit?: DurationUnit,
): number {
  let list = jsonDurations.get(paths);
  if (list === undefined) {
    list = paths.map((p) => ({ paths: [p], unit: jsonDurationUnit(p[p.length - 1] ?? '') }));
    jsonDurations.set(paths, list);
  }
  for (let i = 0; i < list.length; i++) {
    const v = pick(o, list[i].paths);
    if (v !== undefined) return durationOf(v, unit ?? list[i].unit);
  }
  return -1;
}
