import type { Policy } from '../core/index.js';

/**
 * The units a policy reads from a bucket's stored state. A concurrency bucket stores minus the units its slots
 * taken, not the units left: threads that reloaded at different moments (or a request admitted before a reload
 * giving its slot back) read one count of requests in flight, each out of the limit it knows (D-G186). A rate
 * bucket stores its units as they are.
 */
export function unitsOf(p: Policy, stored: number): number {
  return p.concurrent > 0 ? stored + p.capacityUnits : stored;
}

/** The state stored for `units` of policy `p`: the inverse of {@link unitsOf}. */
export function storedOf(p: Policy, units: number): number {
  return p.concurrent > 0 ? units - p.capacityUnits : units;
}
