import { readHeader } from './header-source.js';
import type { HeaderSource } from './types.js';

/** The longest incoming request id that is echoed; longer ones are replaced, so a client cannot bloat responses. */
export const MAX_CORRELATION_ID_LENGTH = 128;

/**
 * True for an id safe to echo in a header and a JSON body: 1 to 128 characters of letters, digits and
 * `. _ - : / + = @`. Anything else (spaces, quotes, control characters, non-ASCII) is rejected, never escaped:
 * an id is for grepping logs, and a rewritten id would not grep.
 */
export function isValidCorrelationId(value: string): boolean {
  const n = value.length;
  if (n === 0 || n > MAX_CORRELATION_ID_LENGTH) return false;
  for (let i = 0; i < n; i++) {
    const c = value.charCodeAt(i);
    const ok =
      (c >= 48 && c <= 57) ||
      (c >= 65 && c <= 90) ||
      (c >= 97 && c <= 122) ||
      c === 46 ||
      c === 95 ||
      c === 45 ||
      c === 58 ||
      c === 47 ||
      c === 43 ||
      c === 61 ||
      c === 64;
    if (!ok) return false;
  }
  return true;
}

/** A random prefix per process: generated ids are unique across processes and restarts, and cheap within one. */
const BOOT_ID = globalThis.crypto.randomUUID().slice(0, 13);
let sequence = 0;

/**
 * The last two base-36 digits of every sequence number, zero padded, made once: a number's `toString(36)` is a
 * conversion in the runtime, and a flood of denials asks for one id each. Only the digits above them are
 * converted, once per 1,296 ids.
 */
const LOW = 36 * 36;
const LOW_DIGITS: readonly string[] = Array.from({ length: LOW }, (_, i) => i.toString(36).padStart(2, '0'));
let highOf = -1;
let highText = '';

/**
 * A fresh correlation id: the process's random prefix and a sequence number in base 36, for example
 * `3b241101-e2bb-1a2f`. Cheaper than a UUID per denial (a flood of 429s generates one each), unique per process
 * lifetime, and sortable in logs of one process.
 */
export function newCorrelationId(): string {
  sequence = sequence === Number.MAX_SAFE_INTEGER ? 0 : sequence + 1;
  if (sequence < LOW) return `${BOOT_ID}-${sequence.toString(36)}`;
  const high = Math.floor(sequence / LOW);
  if (high !== highOf) {
    highOf = high;
    highText = `${BOOT_ID}-${high.toString(36)}`;
  }
  // The same text as `sequence.toString(36)` behind the prefix: the high digits, then the low two, padded.
  return `${highText}${LOW_DIGITS[sequence - high * LOW]}`;
}

/**
 * The correlation id of a request: the incoming request id header when it holds a valid id, else a fresh id from
 * {@link newCorrelationId}. Only computed for denials, so allowed requests pay nothing for it.
 *
 * @param headers - the request headers.
 * @param headerName - the request id header, lower case; default `x-request-id`.
 * @returns the id to put in the problem body and to echo in the response.
 *
 * @example
 * ```ts
 * correlationIdOf({ 'x-request-id': 'abc-123' }); // 'abc-123'
 * correlationIdOf({});                            // for example '3b241101-e2bb-1f'
 * ```
 */
export function correlationIdOf(headers: HeaderSource, headerName = 'x-request-id'): string {
  const given = readHeader(headers, headerName);
  if (given !== undefined) {
    const v = given.trim();
    if (isValidCorrelationId(v)) return v;
  }
  return newCorrelationId();
}
