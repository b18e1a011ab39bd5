import type { Metric } from 'prom-client';

/**
 * Default upper bounds of the decision latency histogram, in seconds: 5 microseconds (an in-memory decision) to
 * 250 milliseconds (a remote store under stress).
 */
export const DEFAULT_LATENCY_BUCKETS: readonly number[] = Object.freeze([
  0.000005, 0.00001, 0.000025, 0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1,
  0.25,
]);

interface Series {
  readonly label: string;
  readonly counts: Float64Array;
  sum: number;
  count: number;
}

/**
 * A Prometheus histogram with one label whose observations go into preallocated arrays, so observing allocates
 * nothing (prom-client's own histogram hashes its labels into a new string on every observation). It exposes the
 * same shape prom-client's registry renders for its histograms: cumulative `_bucket` series with `le`, `_sum` and
 * `_count`.
 */
export class CellHistogram {
  readonly #name: string;
  readonly #help: string;
  readonly #labelName: string;
  readonly #bounds: readonly number[];
  readonly #series = new Map<string, Series>();

  /**
   * @param name - the metric name (without `_bucket`).
   * @param help - the help text.
   * @param labelName - the one label's name.
   * @param bounds - ascending upper bounds; `+Inf` is implied.
   */
  constructor(name: string, help: string, labelName: string, bounds: readonly number[]) {
    this.#name = name;
    this.#help = help;
    this.#labelName = labelName;
    this.#bounds = bounds;
  }

  /** Adds one observation under `label`. */
  observe(label: string, value: number): void {
    let s = this.#series.get(label);
    if (s === undefined) {
      s = { label, counts: new Float64Array(this.#bounds.length), sum: 0, count: 0 };
      this.#series.set(label, s);
    }
    const b = this.#bounds;
    for (let i = 0; i < b.length; i++) {
      if (value <= b[i]) {
        s.counts[i]++;
        break;
      }
    }
    s.sum += value;
    s.count++;
  }

  /** The metric object prom-client's `Registry.registerMetric` accepts. */
  asMetric(): Metric<string> {
    const metric = {
      name: this.#name,
      help: this.#help,
      type: 'histogram',
      aggregator: 'sum',
      get: async () => this.#snapshot(),
      reset: () => this.#series.clear(),
    };
    return metric as unknown as Metric<string>;
  }

  #snapshot() {
    const values: { labels: Record<string, string | number>; value: number; metricName: string }[] = [];
    for (const s of this.#series.values()) {
      let cumulative = 0;
      for (let i = 0; i < this.#bounds.length; i++) {
        cumulative += s.counts[i];
        values.push({
          labels: { le: this.#bounds[i], [this.#labelName]: s.label },
          value: cumulative,
          metricName: `${this.#name}_bucket`,
        });
      }
      values.push({
        labels: { le: '+Inf', [this.#labelName]: s.label },
        value: s.count,
        metricName: `${this.#name}_bucket`,
      });
      values.push({ labels: { [this.#labelName]: s.label }, value: s.sum, metricName: `${this.#name}_sum` });
      values.push({
        labels: { [this.#labelName]: s.label },
        value: s.count,
        metricName: `${this.#name}_count`,
      });
    }
    return { name: this.#name, help: this.#help, type: 'histogram', values, aggregator: 'sum' };
  }
}
