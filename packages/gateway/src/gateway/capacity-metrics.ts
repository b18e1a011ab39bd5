import type { Registry } from 'prom-client';
import type { Runtime } from '../admission/runtime.js';
import { inFlightGauges } from '../metrics/in-flight-gauges.js';
import { overloadMetrics } from '../metrics/overload-metrics.js';

/**
 * The metrics of capacity protection, registered once per gateway: the in-flight gauges of the concurrency
 * policies and the metrics of load shedding, both read from the configuration in effect at each scrape.
 *
 * @param runtime - the configuration in effect.
 * @param registry - the gateway's registry.
 * @param prefix - `metrics.prefix`.
 */
export function capacityMetrics(runtime: () => Runtime, registry: Registry, prefix: string): void {
  inFlightGauges({ policies: () => runtime().plan.limiter.policies, registry, prefix });
  overloadMetrics({ shedder: () => runtime().overload?.shedder, registry, prefix });
}
