/*
 * RFC 9112 3.2: a server MUST answer 400 to a request with more than one Host field line or with a Host value
 * that is not `uri-host [ ":" port ]`. Node.js keeps only the first Host in `req.headers`, so two hops that pick
 * different ones (the gateway forwards the first as `X-Forwarded-Host`) would disagree about the request's host.
 * This runs for every request of the proxy listener: one pass over `rawHeaders`, names compared by length first,
 * no allocation and no regular expression.
 */

const COLON = 0x3a;
const OPEN_BRACKET = 0x5b;
const CLOSE_BRACKET = 0x5d;

/** Characters of a `reg-name` (RFC 3986 3.2.2): unreserved, sub-delims and `%` of a percent-encoding. */
const REG_NAME_CHARS = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~!$&'()*+,;=%";
const REG_NAME = charTable(REG_NAME_CHARS);
/** Characters between the brackets of an IP literal (an IPv6 address, a zone id, an `IPvFuture`): those and `:`. */
const IP_LITERAL = charTable(`${REG_NAME_CHARS}:`);

function charTable(chars: string): Uint8Array {
  const t = new Uint8Array(128);
  for (let i = 0; i < chars.length; i++) t[chars.charCodeAt(i)] = 1;
  return t;
}

/**
 * Whether the Host fields of a request make it one to refuse with 400: more than one Host field line, or a Host
 * value that is not a host with an optional port. A request without Host is not refused here: Node.js answers an
 * HTTP/1.1 one itself (`requireHostHeader`), and HTTP/1.0 needs none.
 *
 * @param rawHeaders - the request's `rawHeaders`: names and values alternating, as received.
 */
export function hasBadHost(rawHeaders: readonly string[]): boolean {
  let seen = false;
  for (let i = 0; i < rawHeaders.length; i += 2) {
    if (!isHostName(rawHeaders[i] as string)) continue;
    if (seen) return true;
    seen = true;
    if (!isValidHost(rawHeaders[i + 1] as string)) return true;
  }
  return false;
}

/** `host` in any case, without lower-casing a copy: the length test rejects almost every name at once. */
function isHostName(name: string): boolean {
  // `| 0x20` maps an upper-case ASCII letter to its lower case and leaves the lower case as it is.
  return (
    name.length === 4 &&
    (name.charCodeAt(0) | 0x20) === 0x68 &&
    (name.charCodeAt(1) | 0x20) === 0x6f &&
    (name.charCodeAt(2) | 0x20) === 0x73 &&
    (name.charCodeAt(3) | 0x20) === 0x74
  );
}

/**
 * Whether a Host value is `uri-host [ ":" port ]` (RFC 9110 7.2): a bracketed IP literal or a `reg-name` (which
 * covers IPv4), then an optional colon and digits. Userinfo, a path, spaces or quotes make it invalid. An empty
 * value is valid, as the grammar allows it.
 */
export function isValidHost(value: string): boolean {
  const n = value.length;
  let i = 0;
  if (n > 0 && value.charCodeAt(0) === OPEN_BRACKET) {
    i = 1;
    while (i < n && inTable(IP_LITERAL, value.charCodeAt(i))) i++;
    if (i === 1 || i === n || value.charCodeAt(i) !== CLOSE_BRACKET) return false;
    i++;
  } else {
    while (i < n && inTable(REG_NAME, value.charCodeAt(i))) i++;
  }
  if (i === n) return true;
  if (value.charCodeAt(i) !== COLON) return false;
  for (i++; i < n; i++) {
    const c = value.charCodeAt(i);
    if (c < 0x30 || c > 0x39) return false;
  }
  return true;
}

function inTable(table: Uint8Array, code: number): boolean {
  return code < 128 && table[code] === 1;
}
