import { type OverrideRule, overridePolicy, type Policy } from '../core/index.js';
import type { IpRange } from './ip-address.js';

// Compiled rules and their order, apart from the index that holds them (override-index.ts).

/** A pattern's kind and the string it compares. */
export type OverridePatternKind =
  | { readonly kind: 'exact'; readonly value: string }
  | { readonly kind: 'prefix'; readonly value: string }
  /** One client address, canonical as `normalizeIp` writes it: matched against the client IP, whatever the key. */
  | { readonly kind: 'address'; readonly value: string }
  | { readonly kind: 'range'; readonly range: IpRange };

/** One rule compiled for lookups. */
export interface CompiledOverride {
  readonly rule: OverrideRule;
  readonly effect: OverrideRule['effect'];
  readonly policy: string | undefined;
  readonly tier: string | undefined;
  /** Epoch milliseconds; `Infinity` for a rule without an end. */
  readonly expiresAt: number;
  /** Narrower patterns first ({@link narrowness}); a policy scope before a tier scope before none. */
  readonly rank: number;
  /** The policy replacing a base policy under a `limit` rule (cached per base by `overridePolicy`). */
  policyFor(base: Policy): Policy;
  /** Plans derived under this rule alone, per base plan and mask of the checks it applied to. */
  readonly plans: WeakMap<object, Map<number, object>>;
}

/** Ranks of the pattern kinds: an exact key or a single address above every range, a range above every prefix. */
const EXACT_RANK = 1_000_000;
const RANGE_RANK = 100_000;

/**
 * How narrow a pattern is, before its scope: an exact key, one address or a range of one address; then address ranges by their length, IPv4 counted as the
 * IPv4-mapped IPv6 range it is; then key prefixes by their length (keys are at most a few hundred characters).
 */
export function narrowness(p: OverridePatternKind): number {
  if (p.kind === 'exact' || p.kind === 'address') return EXACT_RANK;
  if (p.kind === 'prefix') return p.value.length * 4;
  const bits = p.range.kind === 'ipv4' ? p.range.bits + 96 : p.range.bits;
  return bits === 128 ? EXACT_RANK : RANGE_RANK + bits * 4;
}

/**
 * Whether a rule applies to a bucket of this policy and tier now: not past its end, its scope admits them, and it
 * is no `limit` on a concurrency policy (a quota and window are rate sizes: requests in flight keep their slots,
 * and a broader rule may still apply to them).
 */
export function admits(
  e: CompiledOverride,
  policy: string,
  tier: string | undefined,
  nowMs: number,
  concurrent: boolean,
): boolean {
  return (
    e.expiresAt > nowMs &&
    (!concurrent || e.effect !== 'limit') &&
    (e.policy === undefined || e.policy === policy) &&
    (e.tier === undefined || e.tier === tier)
  );
}

/**
 * A rule ready for lookups, its sizes read once.
 *
 * @param rule - the rule as stored.
 * @param rank - from {@link narrowness}, plus 2 for a policy scope or 1 for a tier scope.
 */
export function compile(rule: OverrideRule, rank: number): CompiledOverride {
  const sizes =
    rule.effect === 'limit'
      ? { quota: rule.quota as number, window: rule.window as number, burst: rule.burst as number }
      : undefined;
  return {
    rule,
    effect: rule.effect,
    policy: rule.policy,
    tier: rule.tier,
    expiresAt: rule.expiresAt ?? Number.POSITIVE_INFINITY,
    rank,
    policyFor: (base) => (sizes === undefined ? base : overridePolicy(base, sizes)),
    plans: new WeakMap(),
  };
}
