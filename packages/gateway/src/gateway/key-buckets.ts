import type { Decision } from 'sluice';
import type { GatewayLimits } from '../limits/gateway-limits.js';
import type { BucketView } from '../server/admin-server.js';

/**
 * The buckets of a key under every policy of a configuration, without taking anything (the admin API's
 * `GET /keys/<key>`).
 *
 * @param plan - the policies in effect.
 * @param key - an identity key such as `ip:203.0.113.9` or `acme:ci-bot` (without the key prefix).
 */
export async function bucketsOf(plan: GatewayLimits, key: string): Promise<BucketView[]> {
  const out: BucketView[] = [];
  for (const check of plan.allChecks(key)) {
    const d: Decision = await plan.limiter.peek([check], 1);
    const o = d.outcomes[0];
    const { name, quota, window, burst } = check.policy;
    out.push({ policy: name, quota, window, burst, remaining: o.remaining, resetSeconds: o.resetSeconds });
  }
  return out;
}
