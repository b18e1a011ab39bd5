import { ErrorCode, SluiceError } from './errors.js';

/** Renders a given value for an error message without ever throwing (symbols, cycles, huge strings). */
export function describeValue(value: unknown): string {
  if (typeof value === 'string')
    return JSON.stringify(value.length > 80 ? `${value.slice(0, 77)}...` : value);
  if (typeof value === 'number' || typeof value === 'boolean' || value === null || value === undefined) {
    return String(value);
  }
  if (typeof value === 'bigint') return `${value}n`;
  if (Array.isArray(value)) return `an array of ${value.length}`;
  if (typeof value === 'object') return 'an object';
  // What is left is a function or a symbol, both of which take "a".
  return `a ${typeof value}`;
}

/**
 * Builds the error for an option that failed validation. Every validator in Sluice goes through here so that
 * messages share one shape: `<option> must be <expected>, got <value>`.
 *
 * @param option - the option's path, for example `policies[0].quota`.
 * @param expected - what a valid value looks like.
 * @param value - the value given.
 */
export function invalidOption(option: string, expected: string, value: unknown): SluiceError {
  return new SluiceError(
    ErrorCode.InvalidOption,
    `${option} must be ${expected}, got ${describeValue(value)}`,
    { option, expected, given: describeValue(value) },
  );
}

/**
 * Reads an integer option within bounds, or throws {@link invalidOption}.
 *
 * @returns the value itself when valid, else `fallback` when the value is `undefined` and a fallback is given.
 */
export function integerOption(
  option: string,
  value: unknown,
  min: number,
  max: number = Number.MAX_SAFE_INTEGER,
  fallback?: number,
): number {
  if (value === undefined && fallback !== undefined) return fallback;
  if (typeof value !== 'number' || !Number.isInteger(value) || value < min || value > max) {
    const range =
      max === Number.MAX_SAFE_INTEGER ? `an integer >= ${min}` : `an integer from ${min} to ${max}`;
    throw invalidOption(option, range, value);
  }
  return value;
}

/** Reads a boolean option, or throws {@link invalidOption}. */
export function booleanOption(option: string, value: unknown, fallback: boolean): boolean {
  if (value === undefined) return fallback;
  if (typeof value !== 'boolean') throw invalidOption(option, 'a boolean', value);
  return value;
}

/** Reads a non-empty string option, or throws {@link invalidOption}. */
export function stringOption(option: string, value: unknown, fallback?: string): string {
  if (value === undefined && fallback !== undefined) return fallback;
  if (typeof value !== 'string' || value.length === 0)
    throw invalidOption(option, 'a non-empty string', value);
  return value;
}

/** Rejects option keys that are not known, so a typo never falls back silently to a default. */
export function rejectUnknownKeys(option: string, given: object, known: readonly string[]): void {
  for (const key of Object.keys(given)) {
    if (!known.includes(key)) {
      throw invalidOption(`${option}.${key}`, `one of the known options (${known.join(', ')})`, key);
    }
  }
}

/** Requires a plain object for an options argument. */
export function objectOption(option: string, value: unknown): Record<string, unknown> {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw invalidOption(option, 'an object', value);
  }
  return value as Record<string, unknown>;
}
