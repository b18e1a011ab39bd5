import { invalidOption } from '../core/index.js';
import { detached } from './detached-string.js';
import { forwardedForHops, forwardedHops } from './forwarded.js';
import { readHeader } from './header-source.js';
import { type IpRange, inRanges, NAMED_RANGES, normalizeIp, parseIpRange } from './ip-address.js';
import type { HeaderSource } from './types.js';

/** The forwarding header the trusted proxies write. */
export type ProxyHeader = 'x-forwarded-for' | 'forwarded';

/** Options of {@link createClientIpResolver}. */
export interface ClientIpOptions {
  /**
   * Peers whose forwarding headers are believed: CIDRs (`10.0.0.0/8`, `2001:db8::/32`), single addresses, or the
   * names `loopback`, `linklocal`, `uniquelocal`. Default: none, so the client IP is always the peer address.
   */
  readonly trustedProxies?: readonly string[];
  /**
   * The one header the proxies set. Only that header is read: a proxy that appends to `X-Forwarded-For` usually
   * passes a client's own `Forwarded` header through untouched, so reading both would let a client choose its
   * address. Default `x-forwarded-for`.
   */
  readonly proxyHeader?: ProxyHeader;
}

/** Resolves the client IP of a request; see {@link createClientIpResolver}. */
export interface ClientIpResolver {
  (remoteAddress: string | undefined, headers: HeaderSource): string | undefined;
  /**
   * Whether forwarding headers from this peer are believed (it is one of the trusted proxies). Adapters ask it
   * once, to warn that an `X-Forwarded-For` arrived from a peer that is not trusted. Absent on resolvers not made
   * by {@link createClientIpResolver}.
   */
  readonly trustsPeer?: (remoteAddress: string) => boolean;
}

const TRUSTS_NONE = (): boolean => false;

/**
 * Parses a trusted-proxy list.
 *
 * @param option - the option path for error messages.
 * @param list - CIDRs, addresses or range names.
 * @throws SluiceError `ERR_INVALID_OPTION` naming the first entry that is none of these.
 */
export function parseTrustedProxies(option: string, list: unknown): IpRange[] {
  if (list === undefined) return [];
  if (!Array.isArray(list)) throw invalidOption(option, 'an array of CIDRs, addresses or range names', list);
  const out: IpRange[] = [];
  list.forEach((entry: unknown, i) => {
    const named = typeof entry === 'string' ? NAMED_RANGES[entry] : undefined;
    const texts = named ?? [entry];
    for (const t of texts) {
      const r = typeof t === 'string' ? parseIpRange(t.trim()) : undefined;
      if (r === undefined) {
        throw invalidOption(
          `${option}[${i}]`,
          `a CIDR (10.0.0.0/8), an IP address or one of ${Object.keys(NAMED_RANGES).join(', ')}`,
          entry,
        );
      }
      out.push(r);
    }
  });
  return out;
}

/**
 * Builds the client-IP resolver: the peer address, unless the peer is a trusted proxy, in which case the
 * forwarding header is read from right to left, skipping hops that are themselves trusted proxies; the first
 * untrusted hop is the client. A malformed, `unknown` or obfuscated hop stops the walk at the trusted proxy that
 * reported it (the client is then keyed as that proxy: stricter, never looser). With no trusted proxies, the
 * forwarding headers are never read (a spoofed `X-Forwarded-For` counts against the peer).
 *
 * @param options - trusted proxies and the header they write.
 * @returns a resolver giving the canonical client address (IPv4-mapped addresses unmapped), or `undefined` when
 * the peer address itself is missing or invalid (for example a Unix socket).
 * @throws SluiceError `ERR_INVALID_OPTION` for an invalid proxy entry or header name.
 *
 * @example
 * ```ts
 * const clientIp = createClientIpResolver({ trustedProxies: ['10.0.0.0/8'] });
 * clientIp('10.0.0.5', { 'x-forwarded-for': '198.51.100.7, 10.0.0.9' }); // '198.51.100.7'
 * clientIp('203.0.113.9', { 'x-forwarded-for': '198.51.100.7' });        // '203.0.113.9' (peer not trusted)
 * ```
 */
export function createClientIpResolver(options: ClientIpOptions = {}): ClientIpResolver {
  const ranges = parseTrustedProxies('trustedProxies', options.trustedProxies);
  const header = options.proxyHeader ?? 'x-forwarded-for';
  if (header !== 'x-forwarded-for' && header !== 'forwarded') {
    throw invalidOption('proxyHeader', 'x-forwarded-for or forwarded', header);
  }
  if (ranges.length === 0) {
    const direct = (remoteAddress: string | undefined) =>
      remoteAddress === undefined ? undefined : normalizeIp(remoteAddress);
    return Object.assign(direct, { trustsPeer: TRUSTS_NONE });
  }
  const trusted = new Map<string, boolean>();
  const isTrusted = (ip: string): boolean => {
    let t = trusted.get(ip);
    if (t === undefined) {
      t = inRanges(ip, ranges);
      if (trusted.size >= 4096) trusted.clear();
      trusted.set(detached(ip), t);
    }
    return t;
  };
  const hopsOf = header === 'forwarded' ? forwardedHops : forwardedForHops;
  const trustsPeer = (remoteAddress: string): boolean => {
    const ip = normalizeIp(remoteAddress);
    return ip !== undefined && isTrusted(ip);
  };
  const resolve = (remoteAddress: string | undefined, headers: HeaderSource): string | undefined => {
    if (remoteAddress === undefined) return undefined;
    let current = normalizeIp(remoteAddress);
    if (current === undefined || !isTrusted(current)) return current;
    const value = readHeader(headers, header);
    if (value === undefined) return current;
    for (const hop of hopsOf(value)) {
      const next = normalizeIp(hop);
      if (next === undefined) return current;
      current = next;
      if (!isTrusted(current)) return current;
    }
    return current;
  };
  return Object.assign(resolve, { trustsPeer });
}
