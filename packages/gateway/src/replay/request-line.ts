import type { LogRecord } from './log-record.js';

/**
 * Reads an HTTP request line (`GET /path?q HTTP/1.1`, or without the protocol) from `s[from, to)` into the
 * record: an upper-case token method and an origin-form target (an absolute-form target keeps its path). NGINX
 * writes a request it could not read as `-` or as the raw bytes; those are not requests.
 *
 * @returns false when the text is no request line.
 */
export function readRequestLine(s: string, from: number, to: number, into: LogRecord): boolean {
  const sp = s.indexOf(' ', from);
  if (sp <= from || sp >= to) return false;
  for (let i = from; i < sp; i++) {
    const c = s.charCodeAt(i);
    if (c < 65 || c > 90) return false; // methods are upper-case letters
  }
  let end = s.lastIndexOf(' ', to - 1);
  if (end <= sp) end = to;
  else if (s.charCodeAt(end + 1) !== 72 /* H */) end = to; // a space inside the target, no protocol after it
  let start = sp + 1;
  if (start >= end) return false;
  const c = s.charCodeAt(start);
  if (c !== 47 /* / */) {
    // Absolute form (`GET http://host/path HTTP/1.1`): the path part.
    const scheme = s.indexOf('://', start);
    if (scheme < 0 || scheme > end) return false;
    const slash = s.indexOf('/', scheme + 3);
    if (slash < 0 || slash >= end) {
      into.method = methodOf(s, from, sp);
      into.target = '/';
      return true;
    }
    start = slash;
  }
  into.method = methodOf(s, from, sp);
  into.target = s.slice(start, end);
  return true;
}

const METHODS = ['GET', 'POST', 'PUT', 'DELETE', 'PATCH', 'HEAD', 'OPTIONS'];

/** The method token, one shared string for the common methods (no copy per line). */
function methodOf(s: string, from: number, to: number): string {
  // GET and POST are most lines: told apart by length and first letter before any comparison.
  const n = to - from;
  const c = s.charCodeAt(from);
  if (n === 3 && c === 71 /* G */ && s.charCodeAt(from + 1) === 69 && s.charCodeAt(from + 2) === 84)
    return 'GET';
  for (const m of METHODS) if (m.length === n && m.charCodeAt(0) === c && s.startsWith(m, from)) return m;
  return s.slice(from, to);
}

/**
 * The index of the `"` closing a quoted field that opens before `from`, skipping quotes escaped with a backslash
 * (Apache writes `\"`; NGINX writes `\x22`, which needs no care).
 *
 * @returns the index, or -1 when the field is not closed (a truncated line).
 */
export function closingQuote(s: string, from: number): number {
  let q = s.indexOf('"', from);
  while (q > 0 && s.charCodeAt(q - 1) === 92 /* \ */) {
    // An even run of backslashes escapes itself, not the quote.
    let n = 1;
    while (q - 1 - n >= from && s.charCodeAt(q - 1 - n) === 92) n++;
    if (n % 2 === 0) return q;
    q = s.indexOf('"', q + 1);
  }
  return q;
}

/** True when `s[at, at + 3)` are three digits (an HTTP status). */
export function isStatus(s: string, at: number): boolean {
  for (let i = at; i < at + 3; i++) {
    const c = s.charCodeAt(i);
    // Written so that NaN (past the end of a truncated line) fails too.
    if (!(c >= 48 && c <= 57)) return false;
  }
  const after = s.charCodeAt(at + 3);
  return Number.isNaN(after) || after === 32 || after === 9;
}
