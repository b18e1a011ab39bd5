import promClient, { type Registry } from 'prom-client';
import type { Priority } from '../config/resolve-overload.js';

/** What the metrics read of the load shedder: its limit, requests in flight, and requests shed by priority. */
export interface ShedderView {
  readonly limit: number;
  readonly inFlight: number;
  /** Requests shed so far, in {@link PRIORITY_LABELS} order. */
  readonly shed: readonly number[];
}

/** The label values of `<prefix>_shed_total`, in the shedder's order. */
export const PRIORITY_LABELS: readonly Priority[] = Object.freeze(['critical', 'normal', 'sheddable']);

/** What the overload metrics read of the gateway. */
export interface OverloadMetricsHost {
  /** The shedder of the configuration in effect, read at each scrape; `undefined` without `overload:`. */
  readonly shedder: () => ShedderView | undefined;
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
  const given = new WeakMap<ShedderView, number[]>();
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
      const shedder = host.shedder();
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
      for (let i = 0; i < PRIORITY_LABELS.length; i++) {
        // Every priority has its series from the start, so a rate over it never misses the first refusals.
        this.inc({ priority: PRIORITY_LABELS[i] }, shed[i] - seen[i]);
        seen[i] = shed[i];
      }
      limit.set(shedder.limit);
      inFlight.set(shedder.inFlight);
    },
  });
  registry.registerMetric(limit);
  registry.registerMetric(inFlight);
}
