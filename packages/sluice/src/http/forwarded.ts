/*
 * Readers of the two forwarding headers. Both scan from the right end, because only the hops added by trusted
 * proxies are believable and those are the rightmost ones; nothing here uses a regular expression, so a hostile
 * header costs time linear in its length and never more.
 */

/**
 * Strips brackets and a port from one forwarded node (`[2001:db8::1]:4711`, `192.0.2.1:80`, `2001:db8::1`).
 *
 * @returns the address part, untrimmed of anything else; validation is the caller's.
 */
export function stripPort(node: string): string {
  if (node.charCodeAt(0) === 91 /* [ */) {
    const end = node.indexOf(']');
    return end < 0 ? '' : node.slice(1, end);
  }
  const colon = node.indexOf(':');
  // One colon means IPv4 with a port; several mean a bare IPv6 address.
  if (colon >= 0 && node.indexOf(':', colon + 1) < 0) return node.slice(0, colon);
  return node;
}

/**
 * The hops of `X-Forwarded-For`, rightmost first.
 *
 * @param value - the header value (several field lines already joined with commas).
 * @returns the trimmed entries from right to left; empty entries are kept as `''` so that a gap stops the walk.
 */
export function forwardedForHops(value: string): string[] {
  const out: string[] = [];
  let end = value.length;
  while (end >= 0) {
    // lastIndexOf with a negative start searches from 0, so the first position needs its own case.
    const comma = end === 0 ? -1 : value.lastIndexOf(',', end - 1);
    out.push(stripPort(value.slice(comma + 1, end).trim()));
    if (comma < 0) break;
    end = comma;
  }
  return out;
}

/**
 * The `for=` nodes of an RFC 7239 `Forwarded` header, rightmost element first. Quoted strings (with backslash
 * escapes) are unquoted; an element without `for` yields `''`; `unknown` and obfuscated identifiers (`_abc`) are
 * returned as they are, and fail address validation later, which stops the walk at the proxy that sent them.
 *
 * Elements are split from the right end, as trusted proxies append them: a client writes only what comes before
 * its first proxy's element, so nothing it writes (an unclosed quote, a stray comma or backslash) can join a
 * proxy's element to its own or change what the proxy wrote. A quote without its opening one takes the rest of
 * the header to its left into one malformed element, which is the client's own.
 *
 * @param value - the header value (several field lines already joined with commas).
 * @returns one node per element, right to left; a malformed element yields `''`.
 */
export function forwardedHops(value: string): string[] {
  const out: string[] = [];
  let end = value.length;
  for (;;) {
    const start = elementStart(value, end);
    out.push(forNode(value, start, end));
    if (start === 0) return out;
    end = start - 1; // the comma before the element
  }
}

/** Where the element ending at `end` starts: after the nearest comma to its left outside a quoted string. */
function elementStart(value: string, end: number): number {
  for (let i = end - 1; i >= 0; i--) {
    const c = value.charCodeAt(i);
    if (c === 44 /* , */) return i + 1;
    if (c !== 34 /* " */) continue;
    // The end of a quoted string: its opening quote is the nearest one to the left that no backslash escapes.
    let j = i - 1;
    while (j >= 0 && (value.charCodeAt(j) !== 34 || escaped(value, j))) j--;
    if (j < 0) return 0;
    i = j;
  }
  return 0;
}

/** Whether the character at `at` follows an odd run of backslashes (inside a quoted string, an escaped one). */
function escaped(value: string, at: number): boolean {
  let n = 0;
  while (at - n - 1 >= 0 && value.charCodeAt(at - n - 1) === 92 /* \ */) n++;
  return n % 2 === 1;
}

/** The `for=` node of the element between `start` and `end` (ports and brackets stripped), or `''` when malformed. */
function forNode(value: string, start: number, end: number): string {
  let i = start;
  let found = '';
  for (;;) {
    // One pair, up to ';' or the end of the element.
    while (i < end && (value[i] === ' ' || value[i] === '\t')) i++;
    const nameStart = i;
    while (i < end && value[i] !== '=' && value[i] !== ';' && value[i] !== ',') i++;
    const name = value.slice(nameStart, i).trim().toLowerCase();
    let pairValue = '';
    if (i < end && value[i] === '=') {
      i++;
      if (value[i] === '"') {
        i++;
        let closed = false;
        while (i < end) {
          const c = value[i];
          if (c === '\\' && i + 1 < end) {
            pairValue += value[i + 1];
            i += 2;
          } else if (c === '"') {
            i++;
            closed = true;
            break;
          } else {
            pairValue += c;
            i++;
          }
        }
        if (!closed) return '';
      } else {
        const valueStart = i;
        while (i < end && value[i] !== ';' && value[i] !== ',') i++;
        pairValue = value.slice(valueStart, i).trim();
      }
    } else if (name !== '') return '';
    if (name === 'for' && found === '') found = pairValue;
    while (i < end && value[i] !== ';') {
      // Junk after a quoted string (or a comma the split from the right did not see) makes the element malformed.
      if (value[i] !== ' ' && value[i] !== '\t') return '';
      i++;
    }
    if (i >= end) return stripPort(found);
    i++; // ';'
  }
}
