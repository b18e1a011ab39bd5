import { inFlightRequests } from 'sluice/http';
import type { Runtime } from '../admission/runtime.js';
import type { CapacityView, InFlightView } from './dashboard-frame.js';

/** The other threads' requests in flight per concurrency policy (`ThreadPeers` is one). */
export interface PeerInFlight {
  inFlightOf(policy: string): number;
}

/**
 * What the dashboard shows of capacity protection for the configuration in effect: each concurrency policy's
 * requests in flight against its slots, and load shedding's limit, requests in flight and requests shed by
 * priority (the page turns the totals into a rate). `undefined` when neither is configured, so the panel stays
 * hidden.
 *
 * @param runtime - the configuration in effect, or `undefined` when the host has none to offer.
 * @param peers - as the first thread of `sluice serve --threads`, the other threads' requests in flight, added
 *   per policy so that the panel shows the process (load shedding's count is already the process's).
 */
export function capacityView(runtime: Runtime | undefined, peers?: PeerInFlight): CapacityView | undefined {
  if (runtime === undefined) return undefined;
  const concurrency: InFlightView[] = [];
  for (const p of runtime.plan.limiter.policies) {
    if (p.concurrent > 0)
      concurrency.push({
        policy: p.name,
        inFlight: inFlightRequests(p) + (peers?.inFlightOf(p.name) ?? 0),
        limit: p.concurrent,
      });
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
