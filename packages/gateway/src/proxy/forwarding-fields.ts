/**
 * The forwarding fields the gateway writes or removes on the way upstream: `X-Forwarded-For` and `Forwarded`
 * (appended), `X-Forwarded-Proto`, `X-Forwarded-Host` and `X-Real-IP` (set), `X-Original-URL` and
 * `X-Rewrite-URL` (removed unless a trusted proxy sent them). Lower case, as Node.js names request headers.
 */
export const FORWARDING_FIELDS: readonly string[] = Object.freeze([
  'forwarded',
  'x-real-ip',
  'x-rewrite-url',
  'x-original-url',
  'x-forwarded-for',
  'x-forwarded-host',
  'x-forwarded-proto',
]);

// The fields by name length: a header whose length no field has (most of them) costs one array read.
const BY_LENGTH: (readonly string[] | undefined)[] = [];
for (const field of FORWARDING_FIELDS) BY_LENGTH[field.length] = [...(BY_LENGTH[field.length] ?? []), field];

const UPPER_A = 65;
const UPPER_Z = 90;
const UNDERSCORE = 95;
const DASH = 45;

/**
 * Whether a request header name is another spelling of a forwarding field: the same name once ASCII upper case
 * is read as lower case and `_` as `-` (`X_Real_IP`, `x-forwarded_for`), but not the field's own lower-case,
 * dash spelling. CGI-style servers (PHP, WSGI, Rack) read every such spelling as the field itself
 * (`HTTP_X_REAL_IP`), so a client could set through one what the gateway replaced or removed under the other.
 *
 * Compared character by character against the fields of the same length: nothing is allocated, and a name of
 * another length is rejected at once (this runs for every request header).
 *
 * @param name - a request header name.
 * @returns true for another spelling of a field of {@link FORWARDING_FIELDS}.
 */
export function isForwardingLookAlike(name: string): boolean {
  const candidates = BY_LENGTH[name.length];
  if (candidates === undefined) return false;
  for (let i = 0; i < candidates.length; i++) {
    const field = candidates[i];
    if (field !== name && sameField(name, field)) return true;
  }
  return false;
}

/** `name` read as `field` (same length): ASCII case folded, `_` read as `-`. */
function sameField(name: string, field: string): boolean {
  for (let i = 0; i < field.length; i++) {
    let c = name.charCodeAt(i);
    if (c >= UPPER_A && c <= UPPER_Z) c += 32;
    else if (c === UNDERSCORE) c = DASH;
    if (c !== field.charCodeAt(i)) return false;
  }
  return true;
}
