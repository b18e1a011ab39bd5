import { isIP } from 'node:net';
import ipaddr from 'ipaddr.js';
import { detached } from './detached-string.js';

/*
 * Addresses are validated by node:net (strict: no octal, hex or short IPv4 forms, which ipaddr.js would accept)
 * and parsed by ipaddr.js for IPv6 parts and CIDR matching. Results are cached because a server sees the same
 * peers again and again: its proxies on almost every request, and its returning clients.
 */

/**
 * Entries each address cache holds before it is cleared. Large enough for the returning clients of a busy server
 * (at 4,096, a server or a log replay with 50,000 clients rebuilt most keys), small enough to stay a few
 * megabytes per cache even for a flood of distinct addresses (docs/DECISIONS.md).
 */
export const ADDRESS_CACHE_LIMIT = 65_536;
const normalized = new Map<string, string | null>();
const keyed = new Map<string, string>();

function remember<V>(map: Map<string, V>, k: string, v: V): V {
  // Clearing all at the cap is cheaper than LRU bookkeeping and bounds memory under a flood of distinct values.
  if (map.size >= ADDRESS_CACHE_LIMIT) map.clear();
  // The key may be cut from a long header or log text: the cache keeps a copy, never the text.
  map.set(detached(k), v);
  return v;
}

/**
 * Validates and canonicalizes an IP address: IPv4 stays as given (node:net admits only dotted decimal), IPv6 is
 * compressed and lower-cased with any zone id dropped, and an IPv4-mapped IPv6 address (`::ffff:192.0.2.1`) is
 * unmapped to its IPv4 form so that one client never has two identities.
 *
 * @param value - an address without brackets or port.
 * @returns the canonical address, or `undefined` when the value is not an IP address (never throws).
 *
 * @example
 * ```ts
 * normalizeIp('::FFFF:192.0.2.1'); // '192.0.2.1'
 * normalizeIp('2001:DB8::1');      // '2001:db8::1'
 * normalizeIp('not an ip');        // undefined
 * ```
 */
export function normalizeIp(value: string): string | undefined {
  const hit = normalized.get(value);
  if (hit !== undefined) return hit ?? undefined;
  const kind = isIP(value);
  if (kind === 4) {
    // The address itself is the answer, used in keys: a copy, so that no key holds the text it was cut from.
    return remember<string | null>(normalized, value, detached(value)) as string;
  }
  if (kind !== 6) {
    remember<string | null>(normalized, value, null);
    return undefined;
  }
  // The URL standard's text is already RFC 5952; ipaddr.js only tells a mapped IPv4 address apart.
  const text = canonicalIpv6(value);
  const v6 = ipaddr.IPv6.parse(text);
  const out = v6.isIPv4MappedAddress() ? v6.toIPv4Address().toString() : text;
  remember<string | null>(normalized, value, out);
  return out;
}

/**
 * Parses an address node:net accepts as IPv6, without its zone id (no caller keeps it, and ipaddr.js refuses zones
 * node:net takes, such as `%eth-0` or `%en0.1`). ipaddr.js alone also refuses some valid forms with an IPv4 tail
 * (`::1.2.3.4`) and reads others wrongly (`0:1::0:0:0.0.0.0` as `::1:0:0:0:0:0:0`), which would give one client
 * two identities; so the address is first written in the URL standard's canonical form (hexadecimal groups only,
 * as `new URL` serializes an IPv6 host), which ipaddr.js reads right.
 */
function parseIpv6(text: string): ipaddr.IPv6 {
  return ipaddr.IPv6.parse(canonicalIpv6(text));
}

/** The RFC 5952 text of an address node:net accepts as IPv6, its zone id dropped (see {@link parseIpv6}). */
function canonicalIpv6(text: string): string {
  const pct = text.indexOf('%');
  const address = pct < 0 ? text : text.slice(0, pct);
  try {
    return new URL(`http://[${address}]`).hostname.slice(1, -1);
  } catch {
    return address;
  }
}

/**
 * The RFC 5952 text of an IPv6 address, as servers and operators write it, by the URL standard's serializer (the
 * first longest run of zero groups shortened). ipaddr.js's own text may shorten another run, even a single group.
 */
function ipv6Text(parts: readonly number[]): string {
  return new URL(`http://[${parts.map((p) => p.toString(16)).join(':')}]`).hostname.slice(1, -1);
}

/**
 * The bucket identity of a client address: an IPv4 address as it is, an IPv6 address by its /64 prefix (one
 * subscriber usually holds a whole /64, so keying single addresses would give it 2^64 buckets), an IPv4-mapped
 * address as its IPv4 form.
 *
 * @param ip - any IP address string.
 * @returns for example `192.0.2.1` or `2001:db8:1:2::/64`; `undefined` for a value that is not an IP address.
 */
export function ipKeyOf(ip: string): string | undefined {
  const hit = keyed.get(ip);
  if (hit !== undefined) return hit;
  const canonical = normalizeIp(ip);
  if (canonical === undefined) return undefined;
  if (isIP(canonical) === 4) return remember(keyed, ip, detached(canonical));
  // Canonical IPv6 text (from the URL standard) is hexadecimal groups only, which ipaddr.js reads right.
  const p = ipaddr.IPv6.parse(canonical).parts;
  const prefix = ipv6Text([p[0], p[1], p[2], p[3], 0, 0, 0, 0]);
  return remember(keyed, ip, `${prefix}/64`);
}

/** A parsed CIDR range of one address family. */
export interface IpRange {
  readonly kind: 'ipv4' | 'ipv6';
  readonly text: string;
  readonly address: ipaddr.IPv4 | ipaddr.IPv6;
  readonly bits: number;
}

/** Named ranges accepted in a trusted-proxy list (the same names as the `proxy-addr` package Express uses). */
export const NAMED_RANGES: Readonly<Record<string, readonly string[]>> = Object.freeze({
  loopback: ['127.0.0.0/8', '::1/128'],
  linklocal: ['169.254.0.0/16', 'fe80::/10'],
  uniquelocal: ['10.0.0.0/8', '172.16.0.0/12', '192.168.0.0/16', 'fc00::/7'],
});

/**
 * Parses one range: a CIDR (`10.0.0.0/8`, `2001:db8::/32`) or a single address (a /32 or /128). IPv4-mapped
 * IPv6 ranges are converted to IPv4 ranges, since addresses are unmapped before matching.
 *
 * @returns the range, or `undefined` when the text is neither.
 */
export function parseIpRange(text: string): IpRange | undefined {
  const slash = text.indexOf('/');
  const addr = slash < 0 ? text : text.slice(0, slash);
  const kind = isIP(addr);
  if (kind === 0) return undefined;
  let bits = kind === 4 ? 32 : 128;
  if (slash >= 0) {
    const b = text.slice(slash + 1);
    if (!/^\d{1,3}$/.test(b) || Number(b) > bits) return undefined;
    bits = Number(b);
  }
  let address: ipaddr.IPv4 | ipaddr.IPv6 = kind === 4 ? ipaddr.IPv4.parse(addr) : parseIpv6(addr);
  if (address.kind() === 'ipv6' && (address as ipaddr.IPv6).isIPv4MappedAddress() && bits >= 96) {
    address = (address as ipaddr.IPv6).toIPv4Address();
    bits -= 96;
  }
  return Object.freeze({ kind: address.kind(), text, address, bits });
}

/**
 * The canonical text of a range: its network address (the bits past the prefix length cleared), an IPv6 one
 * compressed and in lower case, then `/` and the length; an IPv4-mapped range as the IPv4 range it is.
 *
 * @example
 * ```ts
 * rangeText(parseIpRange('198.18.60.9/24')!);    // '198.18.60.0/24'
 * rangeText(parseIpRange('2001:DB8:60::1/64')!); // '2001:db8:60::/64'
 * ```
 */
export function rangeText(range: IpRange): string {
  const bytes = range.address.toByteArray();
  for (let i = 0; i < bytes.length; i++) {
    const keep = Math.min(8, Math.max(0, range.bits - i * 8));
    bytes[i] &= (0xff << (8 - keep)) & 0xff;
  }
  if (range.kind === 'ipv4') return `${bytes.join('.')}/${range.bits}`;
  const parts: number[] = [];
  for (let i = 0; i < 16; i += 2) parts.push((bytes[i] << 8) | bytes[i + 1]);
  return `${ipv6Text(parts)}/${range.bits}`;
}

/** An address parsed once, to be tested against many ranges with {@link inRange}. */
export type ParsedAddress = ipaddr.IPv4 | ipaddr.IPv6;

/**
 * Parses a canonical address (from {@link normalizeIp}) for range tests.
 *
 * @returns the parsed address, or `undefined` for a value that is not an IP address.
 */
export function parseAddress(ip: string): ParsedAddress | undefined {
  const kind = isIP(ip);
  return kind === 4 ? ipaddr.IPv4.parse(ip) : kind === 6 ? parseIpv6(ip) : undefined;
}

/** True when a parsed address is in a range of its own family. */
export function inRange(address: ParsedAddress, range: IpRange): boolean {
  return (
    range.kind === address.kind() && (address as ipaddr.IPv4).match(range.address as ipaddr.IPv4, range.bits)
  );
}

/**
 * Tests a canonical address (from {@link normalizeIp}) against ranges.
 *
 * @param ip - a canonical address; a value that is not one is in no range.
 * @param ranges - parsed ranges.
 */
export function inRanges(ip: string, ranges: readonly IpRange[]): boolean {
  if (ranges.length === 0) return false;
  const parsed = parseAddress(ip);
  if (parsed === undefined) return false;
  for (const r of ranges) if (inRange(parsed, r)) return true;
  return false;
}
