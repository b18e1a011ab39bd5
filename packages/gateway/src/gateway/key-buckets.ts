import type { Check, Decision, Policy } from 'sluice';
import type { GatewayLimits } from '../limits/gateway-limits.js';
import type { BucketView } from '../server/admin-server.js';
import type { OverrideCheck } from '../server/override-checks.js';

/**
 * The buckets of a key under every policy of a configuration, without taking anything (the admin API's
 * `GET /keys/<key>`).
 *
 * @param plan - the policies in effect.
 * @param key - an identity key such as `ip:203.0.113.9` or `tenant:acme:client:ci-bot` (without the key prefix).
 * @param overrides - the key's buckets under `limit` overrides in force (`overrideChecks`), shown after the
 *   configured ones with the id of their rule.
 */
export async function bucketsOf(
  plan: GatewayLimits,
  key: string,
  overrides: readonly OverrideCheck[] = [],
): Promise<BucketView[]> {
  const out: BucketView[] = [];
  const checks: readonly (Check | OverrideCheck)[] = [...plan.allChecks(key), ...overrides];
  for (const check of checks) {
    // An override's policy is none of the limiter's (it checks that), so its bucket is read from the store itself.
    const d: Decision =
      'override' in check ? await plan.limiter.store.peek([check], 1) : await plan.limiter.peek([check], 1);
    const o = d.outcomes[0];
    const { name, quota, window, burst } = check.policy;
    const view = { policy: name, quota, window, burst, remaining: o.remaining, resetSeconds: o.resetSeconds };
    const debt = debtOf(check.policy, o.resetSeconds);
    const shown = debt > 0 ? { ...view, debt } : view;
    out.push('override' in check ? { ...shown, override: check.override } : shown);
  }
  return out;
}

/**
 * The tokens a bucket owes below zero, from its seconds until full: the deficit beyond one burst, rounded up to a
 * whole second of refill (the peek tells seconds, not units). 0 for a stepped policy, which the seconds describe in
 * steps, and for one that does not owe.
 */
function debtOf(policy: Policy, resetSeconds: number): number {
  if (policy.stepMs !== 0 || policy.concurrent > 0) return 0;
  return Math.max(0, Math.ceil((resetSeconds * policy.quota) / policy.window) - policy.burst);
}
