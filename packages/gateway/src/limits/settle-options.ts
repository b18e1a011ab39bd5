import type { RuleOptions } from 'sluice/http';
import type { GatewayConfig } from '../config/gateway-config.js';
import type { CostConfig, ReserveField } from '../config/resolve-cost.js';
import { reserveFromBody } from './reserve-from-body.js';

/**
 * The `settle` and `count` rule options of a tier or endpoint rule with `cost:` or `count:` in the
 * configuration; nothing for one without, so its rule is exactly as before.
 */
export function settleOptions(limit: {
  readonly cost?: CostConfig | undefined;
  readonly count?: RuleOptions['count'] | undefined;
}): Pick<RuleOptions, 'settle' | 'count'> {
  const c = limit.cost;
  const count = limit.count === undefined ? {} : { count: limit.count };
  if (c === undefined) return count;
  return {
    ...count,
    settle: {
      ...(c.header === undefined ? {} : { header: c.header, keepHeader: c.keepHeader }),
      ...(c.bytes === undefined ? {} : { bytes: c.bytes }),
      ...(c.json === undefined ? {} : { json: c.json }),
      ...(c.fallback === undefined ? {} : { fallback: c.fallback }),
      ...(c.reserve === undefined
        ? {}
        : {
            reserve: typeof c.reserve === 'number' ? c.reserve : reserveFromBody(c.reserve as ReserveField),
          }),
    },
  };
}

/**
 * The most request body bytes a reservation of this configuration reads (`cost.reserve.maxBytes`), or 0 when no
 * tier, endpoint rule or class reserves from the body: the pipeline then reads no body before admission.
 */
export function reserveBodyBytes(config: GatewayConfig): number {
  let most = 0;
  const limits = [...Object.values(config.tiers), ...config.endpoints, ...Object.values(config.classes)];
  for (const l of limits) {
    const r = l.cost?.reserve;
    if (r !== undefined && typeof r !== 'number') most = Math.max(most, r.maxBytes);
  }
  return most;
}
