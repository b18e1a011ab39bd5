import promClient, { type Registry } from 'prom-client';
import type { LoadShedder } from '../admission/load-shedder.js';
import { PRIORITIES } from '../admission/load-shedder.js';
import type { Runtime } from '../admission/runtime.js';

/** What the overload metrics read of the gateway. */
export interface OverloadMetricsHost {
  /** The configuration in effect, read at each scrape. */
  readonly runtime: () => Runtime;
  readonly registry: Registry;
  /** `metrics.prefix`. */
  readonly prefix: string;
}

/**
 * The metrics of load shedding (`overload:`): `<prefix>_shed_total{priority}`, the requests refused with 503 by
 * priority (three series), and the gauges `<prefix>_overload_limit` (the limit in effect, fixed or learned) and
 * `<prefix>_overload_in_flight` (requests counted toward it). Read from the shedder at scrape time, so a request
 * pays nothing for them; absent while the section is.
 */
export function overloadMetrics(host: OverloadMetricsHost): void {
  const { registry, prefix } = host;
  // What the counter has been given of each shedder's counts: a shedder made anew (the section removed and added
  // again) starts from nothing.
  const given = new WeakMap<LoadShedder, number[]>();
  const limit = new promClient.Gauge({
    name: `${prefix}_overload_limit`,
    help: 'The limit of requests in flight toward the upstream in effect (overload:), fixed or learned from latency.',
    registers: [],
  });
  const inFlight = new promClient.Gauge({
    name: `${prefix}_overload_in_flight`,
    help: 'Requests in flight toward the upstream counted against the overload limit.',
    registers: [],
  });
  // Registered first and read first at a scrape, the counter reads the shedder once for the three.
  new promClient.Counter({
    name: `${prefix}_shed_total`,
    help: 'Requests refused with 503 temporary-reduced-capacity by load shedding, by priority.',
    labelNames: ['priority'],
    registers: [registry],
    collect() {
      const shedder = host.runtime().overload?.shedder;
      if (shedder === undefined) {
        limit.reset();
        inFlight.reset();
        return;
      }
      let seen = given.get(shedder);
      if (seen === undefined) {
        seen = [0, 0, 0];
        given.set(shedder, seen);
      }
      const shed = shedder.shed;
      for (let i = 0; i < PRIORITIES.length; i++) {
        // Every priority has its series from the start, so a rate over it never misses the first refusals.
        this.inc({ priority: PRIORITIES[i] }, shed[i] - seen[i]);
        seen[i] = shed[i];
      }
      limit.set(shedder.limit);
      inFlight.set(shedder.inFlight);
    },
  });
  registry.registerMetric(limit);
  registry.registerMetric(inFlight);
}
