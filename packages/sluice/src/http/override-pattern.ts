import { isIP } from 'node:net';
import { invalidOption } from '../core/index.js';
import { canonicalKeyEscapes, keyAsPattern, patternAsKey } from '../core/key-pattern.js';
import { normalizeIp, parseIpRange, rangeText } from './ip-address.js';
import type { OverridePatternKind } from './override-entry.js';
import { checkPatternShape, KEY_PATTERN_KINDS } from './override-pattern-shape.js';

// Reading and writing override patterns, apart from the index that compiles them (override-index.ts).

/** A bucket key hashed by `boundKey`: its kind, `#`, and 22 base64url characters of its SHA-256. */
const HASHED_KEY = /^[a-z-]+:#[A-Za-z0-9_-]{22}$/;

/**
 * Reads a pattern: `ip:<address>/<bits>` is an address range (matched against the client IP), `tenant:<t>` every
 * key of that tenant, `<prefix>*` a prefix, anything else an exact bucket key. A single address is read as the
 * gateway writes it (see {@link canonicalOverridePattern}) and names that client: it is matched against the client
 * IP, as a range is, so that it holds whatever the request's bucket key (an API key, a tenant's client, the
 * anonymous `ip:` key; an IPv6 client's key is its /64, which never names one address).
 *
 * @throws SluiceError `ERR_INVALID_OPTION` naming `pattern` for a malformed address or range, a key kind in the
 * wrong case, or any other pattern no bucket key can match: an unknown kind, an empty part, a tenant pattern of
 * another shape than `tenant:<t>`, `tenant:<t>:client:<c>` or `tenant:<t>:user:<u>`, a name not escaped as keys
 * escape it (the escaped form is suggested).
 */
export function overridePattern(pattern: string): OverridePatternKind {
  checkKindCase(pattern);
  checkPatternShape(pattern);
  if (pattern.startsWith('ip:') && pattern.includes('/')) {
    const range = parseIpRange(pattern.slice(3));
    if (range === undefined) {
      throw invalidOption(
        'pattern',
        'an address range such as ip:203.0.113.0/24 or ip:2001:db8::/48',
        pattern,
      );
    }
    return { kind: 'range', range };
  }
  // Compared as key text: escapes of spaces, controls, non-ASCII characters and `*` read back (checked above).
  if (pattern.endsWith('*')) return { kind: 'prefix', value: patternAsKey(pattern.slice(0, -1)) as string };
  if (pattern.startsWith('ip:')) return addressPattern(patternAddress(pattern));
  const key = patternAsKey(pattern) as string;
  // A key over the length limit is its kind and a hash (`tenant:#` and 22 characters of SHA-256): that key
  // itself, as a penalty block sets it, not the keys of a tenant named so.
  if (/^tenant:[^:*]+$/.test(pattern) && !HASHED_KEY.test(pattern))
    return { kind: 'prefix', value: `${key}:` };
  return { kind: 'exact', value: key };
}

/**
 * Validates a pattern and writes a single address the way the gateway writes its client's key, so that the rule
 * applies to the requests it names and one client has one rule id: an IPv4-mapped address (`ip:::ffff:1.2.3.4`)
 * as its IPv4 form, zero padding dropped where octal and decimal agree (`ip:127.000.000.001` as `ip:127.0.0.1`),
 * an IPv6 address compressed and in lower case; an address range as its network address (`ip:198.18.60.9/24` as
 * `ip:198.18.60.0/24`, an IPv6 one compressed and in lower case); key escapes in upper-case hex; with
 * `lowerCaseTenant`, the tenant in lower case. Other patterns are returned as given.
 *
 * @param options - see {@link CanonicalPatternOptions}.
 *
 * @param pattern - the pattern an operator gave.
 * @returns the pattern to store.
 * @throws SluiceError `ERR_INVALID_OPTION` naming `pattern`, as {@link overridePattern} does.
 *
 * @example
 * ```ts
 * canonicalOverridePattern('ip:::ffff:192.0.2.1'); // 'ip:192.0.2.1'
 * canonicalOverridePattern('ip:2001:DB8::1');      // 'ip:2001:db8::1' (matched as 2001:db8::1/128)
 * canonicalOverridePattern('ip:198.18.60.9/24');   // 'ip:198.18.60.0/24' (a range as its network address)
 * canonicalOverridePattern('tenant:Zeta', { lowerCaseTenant: true }); // 'tenant:zeta'
 * canonicalOverridePattern('IP:192.0.2.1');        // throws: the kind must be in lower case
 * ```
 */
export function canonicalOverridePattern(pattern: string, options: CanonicalPatternOptions = {}): string {
  const p = overridePattern(pattern);
  if (p.kind === 'range') return `ip:${rangeText(p.range)}`;
  if (isAddressPattern(pattern)) return `ip:${patternAddress(pattern)}`;
  const written = canonicalKeyEscapes(pattern);
  return options.lowerCaseTenant === true ? lowerCaseTenant(written) : written;
}

/** How {@link canonicalOverridePattern} writes the parts of a pattern that keys may hold in several cases. */
export interface CanonicalPatternOptions {
  /**
   * True where tenants are keyed in lower case (the gateway lowers every tenant id): the tenant of a `tenant:`
   * pattern is written in lower case, so that `tenant:Zeta:client:*` applies to the keys of `zeta`. Off by
   * default: a key function of `sluice/http` keeps the tenant as the identity gives it.
   */
  readonly lowerCaseTenant?: boolean;
}

/**
 * A tenant pattern with its tenant in lower case, as the gateway keys tenants (`tenant:Zeta:client:*` as
 * `tenant:zeta:client:*`): the tenant read back from its escapes, lowered, and escaped again, the key's own
 * `%3A` and `%25` kept as they are. Clients and users keep their case; a hashed key (`tenant:#...`) is left whole.
 */
function lowerCaseTenant(pattern: string): string {
  if (!pattern.startsWith('tenant:') || pattern.startsWith('tenant:#')) return pattern;
  const colon = pattern.indexOf(':', 7);
  const star = pattern.endsWith('*') && colon < 0 ? 1 : 0;
  const end = colon < 0 ? pattern.length - star : colon;
  const tenant = patternAsKey(pattern.slice(7, end));
  if (tenant === undefined) return pattern;
  const lowered = tenant.replace(/%25|%3A|[^%]+/g, (m) =>
    m.length === 3 && m[0] === '%' ? m : m.toLowerCase(),
  );
  const written = keyAsPattern(lowered) ?? pattern.slice(7, end);
  return `tenant:${written}${pattern.slice(end)}`;
}

/** An `ip:` pattern that is neither a range nor a prefix: one address, or `ip:unknown`. */
function isAddressPattern(pattern: string): boolean {
  return pattern.startsWith('ip:') && !pattern.includes('/') && !pattern.endsWith('*');
}

function checkKindCase(pattern: string): void {
  const colon = pattern.indexOf(':');
  const kind = colon < 0 ? '' : pattern.slice(0, colon);
  const lower = kind.toLowerCase();
  if (kind !== lower && KEY_PATTERN_KINDS.includes(lower)) {
    throw invalidOption(
      'pattern',
      `written with its kind in lower case (${KEY_PATTERN_KINDS.join(', ')})`,
      pattern,
    );
  }
}

/** An address as a pattern: one client address, or the key `ip:unknown` (clients without an address). */
function addressPattern(address: string): OverridePatternKind {
  return isIP(address) === 0
    ? { kind: 'exact', value: `ip:${address}` }
    : { kind: 'address', value: address };
}

/**
 * The address of an `ip:` pattern without `/` or `*`, canonical as in keys (IPv4-mapped unmapped, IPv6
 * compressed), or `unknown` (the key of clients without an address).
 *
 * @throws SluiceError `ERR_INVALID_OPTION` naming `pattern` for anything else.
 */
function patternAddress(pattern: string): string {
  const text = pattern.slice(3);
  if (text === 'unknown') return text;
  const address = normalizeIp(text) ?? unpaddedIpv4(text, pattern);
  if (address === undefined) {
    throw invalidOption(
      'pattern',
      'an IP address, an address range such as ip:203.0.113.0/24, ip:unknown or a prefix ending in *',
      pattern,
    );
  }
  return address;
}

/**
 * A dotted quad with zero padding (`127.000.000.001`) in canonical form. node:net refuses padding because some
 * tools read a leading zero as octal (`010` is 8); a padded part of one digit reads the same either way, so only
 * those are dropped, and any other padded part is refused with the decimal form, which the operator more likely
 * meant.
 *
 * @returns the canonical address, or `undefined` when the text is no dotted quad.
 * @throws SluiceError `ERR_INVALID_OPTION` naming `pattern` for a padded part that octal reads otherwise.
 */
function unpaddedIpv4(text: string, pattern: string): string | undefined {
  const parts = text.split('.');
  if (parts.length !== 4 || !parts.every((p) => /^\d{1,12}$/.test(p) && Number(p) <= 255)) return undefined;
  const address = parts.map(Number).join('.');
  if (parts.some((p) => p.length > 1 && p.startsWith('0') && Number(p) > 7)) {
    throw invalidOption(
      'pattern',
      `an IPv4 address without leading zeros (ip:${address} if decimal was meant; some tools read a leading zero as octal)`,
      pattern,
    );
  }
  return address;
}
