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
    const debt = debtOf(check.policy, o.remaining, o.resetSeconds);
    const shown = debt > 0 ? { ...view, debt } : view;
    out.push('override' in check ? { ...shown, override: check.override } : shown);
  }
  return out;
}

/**
 * The tokens a bucket owes below zero, from its seconds until full (the peek tells seconds, not units): the deficit
 * beyond one burst, rounded up. Continuous refill: to within a second of refill. Stepped refill: the seconds say how
 * many whole steps fill the bucket, each bringing `quota` tokens, so the debt is told to within one step (at most
 * `quota` tokens above what is owed), and only for a bucket with no whole token left (a bucket whose burst is no
 * whole number of steps would otherwise seem to owe while it holds some). 0 for one that does not owe, and for a
 * concurrency policy.
 */
function debtOf(policy: Policy, remaining: number, resetSeconds: number): number {
  if (policy.concurrent > 0) return 0;
  if (policy.stepMs === 0)
    return Math.max(0, Math.ceil((resetSeconds * policy.quota) / policy.window) - policy.burst);
  if (remaining > 0) return 0;
  // resetSeconds lies within the last step of those that fill the bucket: more than steps - 1 of them, at most all.
  const steps = Math.ceil((resetSeconds * 1000) / policy.stepMs);
  return Math.max(0, steps * policy.quota - policy.burst);
}
