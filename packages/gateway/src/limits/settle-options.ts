import type { RuleOptions } from 'sluice/http';
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
