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
 * than it can be charged. A reservation read from the request body (`max_tokens`) is no bound either: it bounds the
 * part of the usage an upstream honouring it produces (completion tokens), never the prompt tokens a usage such as
 * `total_tokens` also counts, and the gateway cannot tell which parts a `json` cost sums (nor a header's or the
 * bytes' relation to any field), so every reservation is warned about alike.
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
    if (tier.cost !== undefined && tier.concurrency === undefined)
      out.push(finding(['rateLimiting', 'tiers', tier.name, 'cost'], `tier ${tier.name}`, tier.cost));
  }
  for (const rule of config.endpoints) {
    if (rule.cost === undefined || boundedPatterns.has(rule.pattern)) continue;
    out.push(
      finding(['rateLimiting', 'endpoints', rule.index, 'cost'], `endpoint rule ${rule.name}`, rule.cost),
    );
  }
  return out;
}

function finding(path: ConfigPath, what: string, cost: CostConfig): CostFinding {
  const reserve =
    cost.reserve === undefined
      ? '1'
      : typeof cost.reserve === 'number'
        ? String(cost.reserve)
        : `the request body's ${cost.reserve.path.join('.')}`;
  return {
    path,
    message: `${what} charges its cost after the response, reserving ${reserve} at admission: requests a client sends at once are each admitted on the reservation, and what they cost beyond it is charged only down to one burst of debt, so a client sending many at once is served more than it is charged`,
    suggestion:
      'bound the requests in flight (concurrentRequests on every tier, or a concurrent: rule on the same pattern): a reservation, fixed or read from the request body, bounds only what is taken at admission, not what the response costs (max_tokens bounds no prompt tokens)',
  };
}
