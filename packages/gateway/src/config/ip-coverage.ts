import type { IpRange } from 'sluice/http';

/** An address family whose every address a list of ranges covers. */
export type AddressFamily = 'IPv4' | 'IPv6';

/**
 * The address families that a list of ranges covers completely, alone (`0.0.0.0/0`, `::/0`) or together
 * (`0.0.0.0/1` and `128.0.0.0/1`). The ranges are merged as integer intervals, so the answer is exact whatever
 * the order, overlaps or sizes of the blocks.
 *
 * @param ranges - parsed ranges, as `parseTrustedProxies` of `sluice/http` gives them.
 * @returns the families covered, IPv4 first; empty when some address of each family is left out.
 */
export function coveredFamilies(ranges: readonly IpRange[]): AddressFamily[] {
  const out: AddressFamily[] = [];
  if (
    covers(
      ranges.filter((r) => r.kind === 'ipv4'),
      32,
    )
  )
    out.push('IPv4');
  if (
    covers(
      ranges.filter((r) => r.kind === 'ipv6'),
      128,
    )
  )
    out.push('IPv6');
  return out;
}

function covers(ranges: readonly IpRange[], width: number): boolean {
  if (ranges.length === 0) return false;
  const intervals = ranges
    .map((r) => {
      const size = 1n << BigInt(width - r.bits);
      const start = (toBigInt(r.address.toByteArray()) / size) * size;
      return [start, start + size] as const;
    })
    .sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0));
  let reach = 0n;
  for (const [start, end] of intervals) {
    if (start > reach) return false;
    if (end > reach) reach = end;
  }
  return reach >= 1n << BigInt(width);
}

function toBigInt(bytes: readonly number[]): bigint {
  let n = 0n;
  for (const b of bytes) n = (n << 8n) | BigInt(b);
  return n;
}
