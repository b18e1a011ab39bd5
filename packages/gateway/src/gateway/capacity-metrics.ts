import type { Registry } from 'prom-client';
import type { Runtime } from '../admission/runtime.js';
import { inFlightGauges } from './in-flight-gauges.js';
import { overloadMetrics } from './overload-metrics.js';

/**
 * The metrics of capacity protection, registered once per gateway: the in-flight gauges of the concurrency
 * policies and the metrics of load shedding, both read from the configuration in effect at each scrape.
 *
 * @param runtime - the configuration in effect.
 * @param registry - the gateway's registry.
 * @param prefix - `metrics.prefix`.
 */
export function capacityMetrics(runtime: () => Runtime, registry: Registry, prefix: string): void {
  inFlightGauges({ runtime, registry, prefix });
  overloadMetrics({ runtime, registry, prefix });
}
