import { type Check, type OverrideRule, overridePolicy, type Policy } from 'sluice';
import { inRanges, normalizeIp, overridePattern } from 'sluice/http';

/** A check of an override's bucket, with the rule that makes it. */
export interface OverrideCheck extends Check {
  /** The id of the `limit` override whose bucket this is. */
  readonly override: string;
}

/**
 * The buckets a key has under the `limit` overrides in force for it: one per configured policy the rule's scope
 * admits. A request under such a rule is counted in a bucket of its own (`overridePolicy`), not the configured
 * one, so inspecting or resetting only the configured buckets would show them full and leave the client refused.
 * A rule scoped to a tier is included whatever the key's tier (the key alone does not tell it): resetting a
 * bucket the key never used is harmless. A rule on a whole tenant matches the keys of that tenant.
 *
 * @param policies - the configured policies.
 * @param rules - the override rules held (any effect, any end).
 * @param identityKey - the key without the configured prefix, well formed (`keyFormIssue`).
 * @param bucketKey - the key as buckets are filed (with the prefix).
 * @param nowMs - epoch milliseconds: rules past their end are left out.
 */
export function overrideChecks(
  policies: readonly Policy[],
  rules: readonly OverrideRule[],
  identityKey: string,
  bucketKey: string,
  nowMs: number,
): OverrideCheck[] {
  const out: OverrideCheck[] = [];
  for (const rule of rules) {
    if (rule.effect !== 'limit' || (rule.expiresAt !== undefined && rule.expiresAt <= nowMs)) continue;
    if (!matches(rule.pattern, identityKey)) continue;
    const sizes = { quota: rule.quota as number, window: rule.window as number, burst: rule.burst as number };
    for (const base of policies) {
      // A limit leaves a concurrency policy as configured: no bucket of its own there.
      if (base.concurrent > 0 || (rule.policy !== undefined && rule.policy !== base.name)) continue;
      out.push({ policy: overridePolicy(base, sizes), key: bucketKey, override: rule.id });
    }
  }
  return out;
}

/**
 * Whether a stored pattern names this key; a malformed stored pattern names none. A rule on one address also
 * applies to the other keys of requests from it (an API key's caller), which the key alone does not tell: those
 * are reached through the key that names them.
 */
function matches(pattern: string, key: string): boolean {
  let shape: ReturnType<typeof overridePattern>;
  try {
    shape = overridePattern(pattern);
  } catch {
    return false;
  }
  if (shape.kind === 'exact') return shape.value === key;
  if (shape.kind === 'prefix') return key.startsWith(shape.value);
  if (!key.startsWith('ip:') || key === 'ip:unknown') return false;
  const slash = key.indexOf('/');
  if (slash < 0) {
    const address = key.slice(3);
    return shape.kind === 'address' ? shape.value === address : inRanges(address, [shape.range]);
  }
  // An IPv6 key is its /64: a rule reaches it when its range holds the /64, or its address (or narrower range)
  // lies inside it (a rule on one address counts that client in the /64's key).
  const own = overridePattern(key);
  if (own.kind !== 'range') return false;
  if (shape.kind === 'address') return inRanges(shape.value, [own.range]);
  return shape.range.bits <= own.range.bits
    ? inRanges(key.slice(3, slash), [shape.range])
    : inRanges(normalizeIp(shape.range.address.toString()) ?? '', [own.range]);
}
