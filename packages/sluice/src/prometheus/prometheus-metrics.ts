import type { Counter, Gauge, Histogram, Registry } from 'prom-client';
import { booleanOption, type Decision, invalidOption, objectOption, SingleDecision } from '../core/index.js';
import {
  boundedRatios,
  ChildCache,
  type DecisionLabels,
  type ExemptLabels,
  FAILURE_MODES,
  type FailureMode,
  isStoreStatsSource,
  type LimiterMetrics,
  METRIC_OUTCOMES,
  MetricLabels,
  metricOutcome,
  OTHER_LABEL,
  OUTCOME_INDEX,
  outcomeOf,
  QUEUE_WAIT_RESULTS,
  type QueueWaitResult,
  rejectUnknownSinkKeys,
  type StoreStatsSource,
  type WebhookResult,
} from '../metrics/index.js';
import { CellHistogram } from './cell-histogram.js';
import { promClient } from './prom-client.js';
import {
  bucketsOption,
  type Cell,
  cellCounter,
  type FailoverCell,
  failoverMetrics,
} from './prometheus-cells.js';
import {
  type PrometheusMetricNames,
  type PrometheusMetricsOptions,
  prometheusMetricNames,
} from './prometheus-metric-names.js';

/**
 * {@link LimiterMetrics} as Prometheus series through prom-client, in a registry you mount in any server (or serve
 * with {@link metricsHandler}).
 *
 * Recording only adds to plain numbers cached per label combination; the prom-client metrics read them when
 * scraped. So a decision allocates nothing once its label combination has been seen, and scraping costs one pass
 * over the series. Every label goes through a closed set (allow-lists, or the first `maxLabelValues` values, then
 * `other`): a key, IP address or token is never a label, and a flood of distinct keys adds no series.
 *
 * @example
 * ```ts
 * const metrics = new PrometheusMetrics({ prefix: 'acme', tiers: ['free', 'standard', 'enterprise'] });
 * metrics.observeStore(store); // tracked keys and evictions of a MemoryStore, read at scrape time
 * http.createServer(metricsHandler(metrics.registry)).listen(9464, '127.0.0.1');
 * ```
 */
export class PrometheusMetrics implements LimiterMetrics {
  /** The registry holding every metric of this sink. */
  readonly registry: Registry;
  /** The metric names in use. */
  readonly names: PrometheusMetricNames;
  readonly #labels: MetricLabels;
  readonly #decisions = new ChildCache<Cell>(METRIC_OUTCOMES.length);
  readonly #exceeded = new ChildCache<Cell>(1);
  readonly #exempt = new ChildCache<Cell>(1);
  readonly #denyCache = new ChildCache<Cell>(1);
  readonly #byStore = new Map<string, Cell>();
  readonly #latency: CellHistogram;
  readonly #sources: StoreStatsSource[] = [];
  readonly #sourceEvictions = new Map<StoreStatsSource, number>();
  readonly #trackedKeys = new Map<string, number>();
  readonly #evictions = new Map<string, number>();
  readonly #failover = new Map<string, FailoverCell>();
  readonly #alerts = new Map<string, number>();
  readonly #webhook = new Map<string, number>();
  readonly #usage: Gauge<string>;
  readonly #maxTenants: number;
  readonly #queueLength: Gauge<string>;
  readonly #queueWait: Histogram<string>;

  /**
   * @param options - prefix, registry, label allow-lists and bounds, latency buckets.
   * @throws SluiceError `ERR_INVALID_OPTION` for an invalid option.
   */
  constructor(options: PrometheusMetricsOptions = {}) {
    const o = objectOption('PrometheusMetrics options', options) as PrometheusMetricsOptions;
    rejectUnknownSinkKeys('PrometheusMetrics options', o, [
      'prefix',
      'registry',
      'latencyBuckets',
      'processMetrics',
    ]);
    this.names = prometheusMetricNames(o.prefix ?? 'sluice');
    if (o.registry !== undefined && !(o.registry instanceof promClient.Registry)) {
      throw invalidOption('registry', 'a prom-client Registry', o.registry);
    }
    this.registry = o.registry ?? new promClient.Registry();
    this.#labels = new MetricLabels(o, 'PrometheusMetrics options');
    this.#maxTenants = this.#labels.maxTenantSeries;
    const n = this.names;
    const r = [this.registry];
    cellCounter(
      n.decisions,
      'Rate limit decisions by policy and outcome.',
      ['policy', 'tier', 'rule', 'outcome'],
      r,
      this.#decisions,
    );
    cellCounter(
      n.exceeded,
      'Requests denied by a policy (rate limit exceeded), by policy, tier and endpoint rule.',
      ['policy', 'tier', 'rule'],
      r,
      this.#exceeded,
    );
    cellCounter(
      n.exempt,
      'Requests exempt from rate limiting, by reason.',
      ['reason', 'tier', 'rule'],
      r,
      this.#exempt,
    );
    cellCounter(
      n.denyCacheHits,
      'Denials answered by the local deny cache without a store call.',
      ['policy', 'tier', 'rule'],
      r,
      this.#denyCache,
    );
    this.#latency = new CellHistogram(
      n.latency,
      'Time taken by a rate limit decision, in seconds.',
      'store',
      bucketsOption(o.latencyBuckets),
    );
    this.registry.registerMetric(this.#latency.asMetric());
    const byStore = this.#byStore;
    new promClient.Counter({
      name: n.storeErrors,
      help: 'Store calls that failed (timeout, connection lost, script error).',
      labelNames: ['store'],
      registers: r,
      collect() {
        this.reset();
        for (const [store, cell] of byStore) this.inc({ store }, cell.value);
      },
    });
    const sources = this.#sources;
    const tracked = this.#trackedKeys;
    const labels = this.#labels;
    const trackedGauge: Gauge<string> = new promClient.Gauge({
      name: n.trackedKeys,
      help: 'Buckets held by a store now.',
      labelNames: ['store'],
      registers: r,
      collect: () => {
        const g = trackedGauge;
        g.reset();
        const sums = new Map(tracked);
        for (const s of sources) {
          const store = labels.store.value(s.kind);
          const n = s.stats().trackedKeys;
          // A store's snapshot is checked when observed; a later bad value still never becomes a NaN series.
          if (Number.isFinite(n)) sums.set(store, (sums.get(store) ?? 0) + n);
        }
        for (const [store, v] of sums) g.set({ store }, v);
      },
    });
    const evictions = this.#evictions;
    const evictionCounter: Counter<string> = new promClient.Counter({
      name: n.evictions,
      help: 'Buckets evicted to make room before they were full (each may change a later decision).',
      labelNames: ['store'],
      registers: r,
      collect: () => {
        this.#pullEvictions();
        const c = evictionCounter;
        c.reset();
        for (const [store, v] of evictions) c.inc({ store }, v);
      },
    });
    failoverMetrics(n, r, this.#failover);
    this.#usage = new promClient.Gauge({
      name: n.quotaUsage,
      help: "A tenant's usage over the quota window divided by its quota (1 means the quota is used up).",
      labelNames: ['tenant'],
      registers: r,
    });
    const alerts = this.#alerts;
    new promClient.Counter({
      name: n.quotaAlerts,
      help: 'Quota alerts raised, by threshold crossed (a ratio of the quota).',
      labelNames: ['threshold'],
      registers: r,
      collect() {
        this.reset();
        for (const [threshold, v] of alerts) this.inc({ threshold }, v);
      },
    });
    const webhook = this.#webhook;
    new promClient.Counter({
      name: n.webhook,
      help: 'Quota webhook outcomes: delivered, retried (an attempt failed), failed (gave up), dropped (queue full).',
      labelNames: ['result'],
      registers: r,
      collect() {
        this.reset();
        for (const [result, v] of webhook) this.inc({ result }, v);
      },
    });
    // Queues see a request only when it waits, so prom-client's own metrics are cheap enough here.
    this.#queueLength = new promClient.Gauge({
      name: n.queueLength,
      help: 'Requests waiting now in the queue of a policy for their tokens.',
      labelNames: ['policy'],
      registers: r,
    });
    this.#queueWait = new promClient.Histogram({
      name: n.queueWait,
      help: 'Time requests waited in a queue, in seconds, by result (admitted, or abandoned by the client).',
      labelNames: ['policy', 'result'],
      buckets: [0.1, 0.5, 1, 2, 5, 10, 20, 30, 60, 120, 300],
      registers: r,
    });
    if (booleanOption('processMetrics', o.processMetrics, false)) {
      promClient.collectDefaultMetrics({ register: this.registry, prefix: `${o.prefix ?? 'sluice'}_` });
    }
  }

  /**
   * Reads a store's counters (tracked keys, evictions) at every scrape, for example a `MemoryStore` or a
   * `RedisStore` (see {@link isStoreStatsSource}). The decision path is untouched. Observing the same store again
   * changes nothing.
   *
   * @throws SluiceError `ERR_INVALID_OPTION` for a store whose `stats()` does not report whole numbers.
   */
  observeStore(source: StoreStatsSource): this {
    if (!isStoreStatsSource(source)) {
      throw invalidOption(
        'observeStore source',
        'a store with kind and stats() reporting whole numbers trackedKeys and evictions',
        source,
      );
    }
    if (this.#sources.includes(source)) return this;
    this.#sources.push(source);
    this.#sourceEvictions.set(source, source.stats().evictions);
    return this;
  }

  /** The exposition text of every metric, as a scrape would return it. */
  metrics(): Promise<string> {
    return this.registry.metrics();
  }

  recordDecision(decision: Decision, labels?: DecisionLabels, durationSeconds?: number): void {
    const g = this.#labels;
    const tier = g.tier.value(labels?.tier ?? '');
    const rule = g.rule.value(labels?.rule ?? '');
    if (decision instanceof SingleDecision) {
      // The common one-policy case: read the policy off the decision, so its outcome list is never built.
      const p = decision.policy;
      const policy = g.policy.value(p.name);
      this.#count(
        this.#decisions,
        policy,
        tier,
        rule,
        OUTCOME_INDEX[outcomeOf(decision, p.shadow, decision.limited)],
      );
      if (decision.limited && !p.shadow) this.#count(this.#exceeded, policy, tier, rule, 0);
      if (durationSeconds !== undefined && durationSeconds >= 0) {
        this.#latency.observe(g.store.value(labels?.store ?? ''), durationSeconds);
      }
      return;
    }
    const outcomes = decision.outcomes;
    if (outcomes.length === 0) {
      this.#count(this.#decisions, '', tier, rule, OUTCOME_INDEX[failedOutcome(decision)]);
    }
    for (let i = 0; i < outcomes.length; i++) {
      const policy = g.policy.value(outcomes[i].policy.name);
      this.#count(this.#decisions, policy, tier, rule, OUTCOME_INDEX[metricOutcome(decision, i)]);
    }
    const violated = decision.violated;
    for (let i = 0; i < violated.length; i++) {
      this.#count(this.#exceeded, g.policy.value(violated[i].policy.name), tier, rule, 0);
    }
    if (durationSeconds !== undefined && durationSeconds >= 0) {
      this.#latency.observe(g.store.value(labels?.store ?? ''), durationSeconds);
    }
  }

  recordExempt(labels: ExemptLabels): void {
    const g = this.#labels;
    const tier = g.tier.value(labels.tier ?? '');
    const rule = g.rule.value(labels.rule ?? '');
    this.#count(this.#exempt, g.reason.value(labels.reason), tier, rule, 0);
    this.#count(this.#decisions, '', tier, rule, OUTCOME_INDEX.exempt);
  }

  recordStoreError(store: string): void {
    const s = this.#labels.store.value(store);
    let cell = this.#byStore.get(s);
    if (cell === undefined) {
      cell = { labels: Object.freeze({ store: s }), value: 0 };
      this.#byStore.set(s, cell);
    }
    cell.value++;
  }

  recordFailover(store: string, mode: FailureMode, active: boolean): void {
    const s = this.#labels.store.value(store);
    const m = FAILURE_MODES.includes(mode) ? mode : OTHER_LABEL;
    const key = `${s}\u0000${m}`;
    let f = this.#failover.get(key);
    if (f === undefined) {
      f = { switches: 0, active: 0, labels: { store: s, mode: m } };
      this.#failover.set(key, f);
    }
    if (active && f.active === 0) f.switches++;
    f.active = active ? 1 : 0;
  }

  recordDenyCacheHit(policy: string, labels?: DecisionLabels): void {
    const g = this.#labels;
    this.#count(
      this.#denyCache,
      g.policy.value(policy),
      g.tier.value(labels?.tier ?? ''),
      g.rule.value(labels?.rule ?? ''),
      0,
    );
  }

  setTrackedKeys(store: string, count: number): void {
    this.#trackedKeys.set(this.#labels.store.value(store), count);
  }

  recordEvictions(store: string, count: number): void {
    const s = this.#labels.store.value(store);
    this.#evictions.set(s, (this.#evictions.get(s) ?? 0) + count);
  }

  setQuotaUsage(ratios: ReadonlyMap<string, number>): void {
    this.#usage.reset();
    for (const [tenant, ratio] of boundedRatios(ratios, this.#maxTenants)) this.#usage.set({ tenant }, ratio);
  }

  recordQuotaAlert(threshold: number): void {
    const t = String(threshold);
    this.#alerts.set(t, (this.#alerts.get(t) ?? 0) + 1);
  }

  recordWebhook(result: WebhookResult): void {
    this.#webhook.set(result, (this.#webhook.get(result) ?? 0) + 1);
  }

  setQueueLength(policy: string, length: number): void {
    if (Number.isFinite(length)) this.#queueLength.set({ policy: this.#labels.policy.value(policy) }, length);
  }

  recordQueueWait(policy: string, seconds: number, result: QueueWaitResult): void {
    if (!Number.isFinite(seconds) || seconds < 0) return;
    const r = QUEUE_WAIT_RESULTS.includes(result) ? result : OTHER_LABEL;
    this.#queueWait.observe({ policy: this.#labels.policy.value(policy), result: r }, seconds);
  }

  #count(cache: ChildCache<Cell>, a: string, tier: string, rule: string, slot: number): void {
    let cell = cache.find(a, tier, rule, slot);
    if (cell === undefined) cell = cache.store(a, tier, rule, slot, this.#cell(cache, a, tier, rule, slot));
    cell.value++;
  }

  #cell(cache: ChildCache<Cell>, a: string, tier: string, rule: string, slot: number): Cell {
    if (cache === this.#decisions) {
      return { labels: Object.freeze({ policy: a, tier, rule, outcome: METRIC_OUTCOMES[slot] }), value: 0 };
    }
    if (cache === this.#exempt) return { labels: Object.freeze({ reason: a, tier, rule }), value: 0 };
    return { labels: Object.freeze({ policy: a, tier, rule }), value: 0 };
  }

  #pullEvictions(): void {
    for (const s of this.#sources) {
      const now = s.stats().evictions;
      const before = this.#sourceEvictions.get(s) ?? 0;
      if (Number.isFinite(now) && now > before) this.recordEvictions(s.kind, now - before);
      this.#sourceEvictions.set(s, now);
    }
  }
}

function failedOutcome(decision: Decision): 'failed_open' | 'failed_closed' {
  return decision.allowed ? 'failed_open' : 'failed_closed';
}
