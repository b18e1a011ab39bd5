/**
 * The response facts of an access log line that a replay settles costs from: the status and the body size. Kept
 * apart from the request's facts, which every parser reads; formats without them leave them unknown.
 */

/**
 * The body size written at `at` in a common or combined line (`%b`: digits, or `-` for none), or -1 when the
 * field is not there.
 *
 * @param s - the line.
 * @param at - where the field starts (after the status and one space).
 */
export function sizeAt(s: string, at: number): number {
  if (s.charCodeAt(at) === 45 /* - */) return 0;
  let n = 0;
  let i = at;
  for (; i < s.length && i < at + 15; i++) {
    const c = s.charCodeAt(i);
    if (c < 48 || c > 57) break;
    n = n * 10 + (c - 48);
  }
  return i === at ? -1 : n;
}

/** The three-digit status written at `at` (the caller has checked it is one). */
export function statusAt(s: string, at: number): number {
  return (s.charCodeAt(at) - 48) * 100 + (s.charCodeAt(at + 1) - 48) * 10 + (s.charCodeAt(at + 2) - 48);
}

/** A JSON log's status field: a whole number from 100 to 599 (or its text), else 0 (unknown). */
export function statusOf(v: unknown): number {
  const n = typeof v === 'string' ? Number(v) : v;
  return typeof n === 'number' && Number.isInteger(n) && n >= 100 && n <= 599 ? n : 0;
}

/** A JSON log's size field: a whole number of 0 or more (or its text), else -1 (unknown). */
export function sizeOf(v: unknown): number {
  const n = typeof v === 'string' ? Number(v) : v;
  return typeof n === 'number' && Number.isSafeInteger(n) && n >= 0 ? n : -1;
}
