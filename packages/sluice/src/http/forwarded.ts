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
 * @param value - the header value.
 * @returns one node per element, right to left; a malformed element yields `''`.
 */
export function forwardedHops(value: string): string[] {
  const elements: string[] = [];
  let i = 0;
  const n = value.length;
  let current = '';
  let ok = true;
  while (i <= n) {
    // One element: pairs separated by ';' until ',' or the end.
    let found = '';
    for (;;) {
      while (i < n && (value[i] === ' ' || value[i] === '\t')) i++;
      const nameStart = i;
      while (i < n && value[i] !== '=' && value[i] !== ';' && value[i] !== ',') i++;
      const name = value.slice(nameStart, i).trim().toLowerCase();
      let pairValue = '';
      if (i < n && value[i] === '=') {
        i++;
        if (value[i] === '"') {
          i++;
          let closed = false;
          while (i < n) {
            const c = value[i];
            if (c === '\\' && i + 1 < n) {
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
          if (!closed) ok = false;
        } else {
          const start = i;
          while (i < n && value[i] !== ';' && value[i] !== ',') i++;
          pairValue = value.slice(start, i).trim();
        }
      } else if (name !== '') ok = false;
      if (name === 'for' && found === '') found = pairValue;
      while (i < n && value[i] !== ';' && value[i] !== ',') {
        // Junk after a quoted string makes the element malformed.
        if (value[i] !== ' ' && value[i] !== '\t') ok = false;
        i++;
      }
      if (i >= n || value[i] === ',') break;
      i++; // ';'
    }
    current = ok ? stripPort(found) : '';
    elements.push(current);
    ok = true;
    i++; // ',' or past the end
  }
  return elements.reverse();
}
