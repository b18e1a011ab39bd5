import promClient, { type Aggregator, type Registry } from 'prom-client';

/** One thread's series, as `registry.getMetricsAsJSON()` gives them (plain data: it crosses threads). */
export type ThreadMetrics = Awaited<ReturnType<Registry['getMetricsAsJSON']>>;

/**
 * The Prometheus text of `sluice serve --threads`: every thread's series merged into one, so that a scrape sees
 * the gateway as one process whichever thread the kernel hands the connection to. Counters and histograms are
 * summed; gauges take the largest thread's value (the tracked keys and quota usage of a shared table read the same
 * in every thread, and a store in its failure mode in any thread is reported), except the queue length, which is
 * summed (each thread has its own queues); process and Node.js metrics are process-wide, so the first thread's.
 *
 * @param perThread - each thread's series, the first thread first.
 * @param prefix - the metric name prefix (`metrics.prefix`).
 * @returns the text in the Prometheus exposition format.
 */
export function aggregateThreadMetrics(perThread: readonly ThreadMetrics[], prefix: string): Promise<string> {
  const marked = perThread.map((metrics) =>
    metrics.map((m) => Object.assign({}, m, { aggregator: aggregatorOf(m.name, String(m.type), prefix) })),
  );
  return promClient.AggregatorRegistry.aggregate(marked).metrics();
}

/**
 * Gauges each thread counts for itself: the process's value is their sum. The overload limit and its count in
 * flight are the process's in every thread (one shared count), so they take the largest like the other gauges.
 */
const SUMMED_GAUGES = new Set(['queue_length', 'in_flight_requests']);

function aggregatorOf(name: string, type: string, prefix: string): Aggregator {
  if (name.startsWith(`${prefix}_process_`) || name.startsWith(`${prefix}_nodejs_`)) return 'first';
  // Each thread has its own queues and its own requests in flight (the slots themselves are one shared count).
  if (type === 'gauge') return SUMMED_GAUGES.has(name.slice(prefix.length + 1)) ? 'sum' : 'max';
  return 'sum';
}
