import type { GatewayConfig } from './gateway-config.js';
import type { CostConfig } from './resolve-cost.js';
import type { ConfigPath } from './violation.js';

/** A warning of {@link costFindings}, shaped as `checkConfig` reports its findings. */
export interface CostFinding {
  readonly path: ConfigPath;
  readonly message: string;
  readonly suggestion: string;
}

/**
 * Costs settled after the response that requests in parallel can outrun: each request is admitted on its
 * reservation, so requests in flight together are each charged their whole cost only after they ran, and a bucket
 * goes at most one burst into debt. Unless a concurrency limit bounds how many run at once (every limited tier's
 * `concurrentRequests`, or a `concurrent:` rule on the same pattern), a client sending many at once is served more
 * than it can be charged. A reservation read from the request body (`max_tokens`) is left alone: an upstream that
 * honours it never costs more than was reserved.
 *
 * @param config - the resolved configuration.
 * @returns one finding per such rule (endpoint rules and tiers), in file order.
 */
export function costFindings(config: GatewayConfig): CostFinding[] {
  const out: CostFinding[] = [];
  const tiers = Object.values(config.tiers).filter((t) => !t.unlimited);
  const everyTierBounded = tiers.length > 0 && tiers.every((t) => t.concurrency !== undefined);
  if (everyTierBounded) return out;
  const boundedPatterns = new Set(
    config.endpoints.filter((r) => r.concurrency !== undefined).map((r) => r.pattern),
  );
  for (const tier of tiers) {
    if (outrunnable(tier.cost) && tier.concurrency === undefined)
      out.push(finding(['rateLimiting', 'tiers', tier.name, 'cost'], `tier ${tier.name}`, tier.cost));
  }
  for (const rule of config.endpoints) {
    if (!outrunnable(rule.cost) || boundedPatterns.has(rule.pattern)) continue;
    out.push(
      finding(['rateLimiting', 'endpoints', rule.index, 'cost'], `endpoint rule ${rule.name}`, rule.cost),
    );
  }
  return out;
}

/** A cost that may exceed its reservation by any amount: not a reservation read from the body. */
function outrunnable(cost: CostConfig | undefined): cost is CostConfig {
  return cost !== undefined && (cost.reserve === undefined || typeof cost.reserve === 'number');
}

function finding(path: ConfigPath, what: string, cost: CostConfig): CostFinding {
  const reserve = typeof cost.reserve === 'number' ? cost.reserve : 1;
  return {
    path,
    message: `${what} charges its cost after the response, reserving ${reserve} at admission: requests a client sends at once are each admitted on the reservation, and what they cost beyond it is charged only down to one burst of debt, so a client sending many at once is served more than it is charged`,
    suggestion:
      'bound the requests in flight (concurrentRequests on the tiers, or a concurrent: rule on the same pattern), or reserve what a request may cost (cost.reserve, or a field of the request body)',
  };
}
