import promClient, { type Registry } from 'prom-client';
import type { Policy } from 'sluice';
import { inFlightRequests } from 'sluice/http';

/** What the in-flight gauges read of the gateway. */
export interface InFlightHost {
  /** The policies of the configuration in effect, read at each scrape: a reload's show at the next. */
  readonly policies: () => readonly Policy[];
  readonly registry: Registry;
  /** `metrics.prefix`. */
  readonly prefix: string;
}

/**
 * The gauges of the concurrency policies (`concurrentRequests` of tiers, `concurrent` of endpoint rules):
 * `<prefix>_in_flight_requests{policy}`, the requests admitted under each and not yet ended, over every key, and
 * `<prefix>_in_flight_limit{policy}`, its slots per key. One series per configured policy, so the labels are as
 * bounded as the configuration; read at scrape time, so a request pays nothing for them.
 */
export function inFlightGauges(host: InFlightHost): void {
  const { registry, prefix } = host;
  const inFlight = new promClient.Gauge({
    name: `${prefix}_in_flight_requests`,
    help: 'Requests admitted under a concurrency policy whose responses have not ended, over every key.',
    labelNames: ['policy'],
    registers: [],
  });
  // Registered first and read first at a scrape, this gauge sets both: one pass over the policies in effect.
  new promClient.Gauge({
    name: `${prefix}_in_flight_limit`,
    help: 'Requests of one key a concurrency policy admits at once (concurrentRequests, concurrent).',
    labelNames: ['policy'],
    registers: [registry],
    collect() {
      // Reset first: a policy a reload removed leaves the scrape.
      this.reset();
      inFlight.reset();
      for (const p of host.policies()) {
        if (p.concurrent === 0) continue;
        inFlight.set({ policy: p.name }, inFlightRequests(p));
        this.set({ policy: p.name }, p.concurrent);
      }
    },
  });
  registry.registerMetric(inFlight);
}
