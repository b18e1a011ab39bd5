import { ipKey, overridePattern } from 'sluice/http';

/** The forms of bucket keys, as a refusal names them. */
export const KEY_FORMS =
  'ip:<address> (an IPv6 client as its /64, ip:2001:db8::/64), tenant:<t>:client:<c>, tenant:<t>:user:<u>, apikey:<hash>, principal:<p>, device:<d>, token:<t>, connection:<c>, agent:<a>, human:<h>, host:<h>, webhook:<w>, param:<name>:<value> or custom:<k>, with ":" and "%" inside a name written %3A and %25';

/**
 * Why a key given to the admin API (`GET` and `DELETE /keys/<key>`) is not one the gateway makes, or `undefined`
 * for a well-formed key. Inspecting or resetting a key no request can have answers as if it worked (every bucket
 * full, 204): an operator who typed `acme:ci-bot` for `tenant:acme:client:ci-bot` would believe the client reset.
 * The shape rules are those of override patterns (one reading of keys for both), without `*` prefixes and
 * address ranges, which name many keys; an IPv6 client's key is its /64, so that range is a key.
 *
 * @param key - the key as decoded from the path, without the configured key prefix.
 */
export function keyFormIssue(key: string): string | undefined {
  if (key.endsWith('*')) return 'a prefix names many keys; give one key';
  let shape: ReturnType<typeof overridePattern>;
  try {
    shape = overridePattern(key);
  } catch (e) {
    return (e as Error).message;
  }
  if (shape.kind === 'prefix' && key.startsWith('tenant:')) {
    return 'a tenant alone names every key of the tenant; give tenant:<t>:client:<c> or tenant:<t>:user:<u>';
  }
  if (shape.kind !== 'range' || !key.includes('/')) return undefined;
  // The key of any address of the /64 is the /64 as keys write it (its first address, compressed).
  const ok = shape.range.kind === 'ipv6' && shape.range.bits === 64 && ipKey(key.slice(3, -3)) === key;
  return ok ? undefined : 'an address range is not a key (an IPv6 client alone is keyed by its /64)';
}
