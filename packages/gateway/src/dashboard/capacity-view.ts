import { inFlightRequests } from 'sluice/http';
import type { Runtime } from '../admission/runtime.js';
import type { CapacityView, InFlightView } from './dashboard-frame.js';

/**
 * What the dashboard shows of capacity protection for the configuration in effect: each concurrency policy's
 * requests in flight against its slots, and load shedding's limit, requests in flight and requests shed by
 * priority (the page turns the totals into a rate). `undefined` when neither is configured, so the panel stays
 * hidden.
 *
 * @param runtime - the configuration in effect, or `undefined` when the host has none to offer.
 */
export function capacityView(runtime: Runtime | undefined): CapacityView | undefined {
  if (runtime === undefined) return undefined;
  const concurrency: InFlightView[] = [];
  for (const p of runtime.plan.limiter.policies) {
    if (p.concurrent > 0)
      concurrency.push({ policy: p.name, inFlight: inFlightRequests(p), limit: p.concurrent });
  }
  const shedder = runtime.overload?.shedder;
  if (concurrency.length === 0 && shedder === undefined) return undefined;
  if (shedder === undefined) return { concurrency };
  const [critical, normal, sheddable] = shedder.shed;
  return {
    concurrency,
    overload: { limit: shedder.limit, inFlight: shedder.inFlight, shed: [critical, normal, sheddable] },
  };
}
