// Keep in step with the schema's `definitions.duration.pattern` (duration.test.ts compares them).
const DURATION = /^([0-9]+(?:\.[0-9]+)?)(ms|s|m|h|d)$/;
const SIZE = /^([0-9]+)(b|kb|mb|gb)$/;
const UNIT_MS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 };
const UNIT_BYTES: Record<string, number> = { b: 1, kb: 1024, mb: 1024 ** 2, gb: 1024 ** 3 };

/** Examples of every unit a duration string may use, for messages that say what a duration looks like. */
export const DURATION_EXAMPLES = '500ms, 60s, 5m, 1h, 7d';

/**
 * Reads a duration of the configuration file or a command line: a number of seconds or a string such as `500ms`,
 * `60s`, `5m`, `1h`, `7d` (a day is 24 hours). The schema has already checked a file's values; this converts them,
 * and answers `undefined` for a string of another shape.
 *
 * @param value - the validated value.
 * @returns whole milliseconds (rounded to the nearest), or `undefined` when the value is absent.
 */
export function durationMs(value: number | string | undefined): number | undefined {
  if (value === undefined) return undefined;
  if (typeof value === 'number') return Math.round(value * 1000);
  const m = DURATION.exec(value);
  if (m === null) return undefined;
  return Math.round(Number(m[1]) * UNIT_MS[m[2]]);
}

/**
 * Reads a size of the configuration file: a number of bytes or a string such as `512kb` or `10mb` (binary units).
 *
 * @returns bytes, or `undefined` when absent.
 */
export function sizeBytes(value: number | string | undefined): number | undefined {
  if (value === undefined) return undefined;
  if (typeof value === 'number') return value;
  const m = SIZE.exec(value);
  return m === null ? undefined : Number(m[1]) * UNIT_BYTES[m[2]];
}
