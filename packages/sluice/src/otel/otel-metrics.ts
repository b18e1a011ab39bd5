import type {
  Attributes,
  Counter,
  Histogram,
  Meter,
  ObservableGauge,
  ObservableResult,
} from '@opentelemetry/api';
import { type Decision, invalidOption, objectOption, SingleDecision } from '../core/index.js';
import {
  boundedRatios,
  ChildCache,
  type DecisionLabels,
  type ExemptLabels,
  FAILURE_MODES,
  type FailureMode,
  type LabelOptions,
  type LimiterMetrics,
  METRIC_OUTCOMES,
  MetricLabels,
  metricOutcome,
  OTHER_LABEL,
  OUTCOME_INDEX,
  outcomeOf,
  rejectUnknownSinkKeys,
  type StoreStatsSource,
  type WebhookResult,
} from '../metrics/index.js';

/** Options of {@link OtelMetrics}. */
export interface OtelMetricsOptions extends LabelOptions {
  /** The meter to record through, for example `metrics.getMeter('sluice')` from `@opentelemetry/api`. */
  readonly meter: Meter;
  /** Instrument and attribute name prefix (white label): `<prefix>.ratelimit.rejected`. Default `sluice`. */
  readonly prefix?: string;
}

/** The instrument names of an {@link OtelMetrics}, by role. */
export interface OtelInstrumentNames {
  readonly decisions: string;
  readonly rejected: string;
  readonly latency: string;
  readonly exempt: string;
  readonly trackedKeys: string;
  readonly evictions: string;
  readonly storeErrors: string;
  readonly failoverSwitches: string;
  readonly failoverActive: string;
  readonly denyCacheHits: string;
  readonly quotaUsage: string;
  readonly quotaAlerts: string;
  readonly webhook: string;
}

/** The attribute names of an {@link OtelMetrics}. */
export interface OtelAttributeNames {
  /** The policy (its policy class): `<prefix>.ratelimit.class`. */
  readonly policy: string;
  readonly tier: string;
  readonly rule: string;
  readonly outcome: string;
  readonly reason: string;
  readonly store: string;
  readonly mode: string;
  readonly tenant: string;
  readonly threshold: string;
  readonly result: string;
}

const PREFIX = /^[a-zA-Z][a-zA-Z0-9_.-]*$/;

/**
 * Instrument and attribute names for a prefix, following OpenTelemetry's dotted naming. The rejected counter and
 * its class attribute are `<prefix>.ratelimit.rejected` with `<prefix>.ratelimit.class`.
 *
 * @throws SluiceError `ERR_INVALID_OPTION` for a prefix that is not a valid instrument name start.
 */
export function otelNames(prefix = 'sluice'): {
  instruments: OtelInstrumentNames;
  attributes: OtelAttributeNames;
} {
  if (typeof prefix !== 'string' || !PREFIX.test(prefix)) {
    throw invalidOption('prefix', 'an instrument name prefix matching [a-zA-Z][a-zA-Z0-9_.-]*', prefix);
  }
  const p = `${prefix}.ratelimit`;
  return {
    instruments: Object.freeze({
      decisions: `${p}.decisions`,
      rejected: `${p}.rejected`,
      latency: `${p}.decision.duration`,
      exempt: `${p}.exempt`,
      trackedKeys: `${p}.tracked_keys`,
      evictions: `${p}.evictions`,
      storeErrors: `${p}.store.errors`,
      failoverSwitches: `${p}.store.failure_mode.switches`,
      failoverActive: `${p}.store.failure_mode.active`,
      denyCacheHits: `${p}.deny_cache.hits`,
      quotaUsage: `${prefix}.quota.usage_ratio`,
      quotaAlerts: `${prefix}.quota.alerts`,
      webhook: `${prefix}.quota.webhook.deliveries`,
    }),
    attributes: Object.freeze({
      policy: `${p}.class`,
      tier: `${p}.tier`,
      rule: `${p}.rule`,
      outcome: `${p}.outcome`,
      reason: `${p}.exempt_reason`,
      store: `${p}.store`,
      mode: `${p}.failure_mode`,
      tenant: `${prefix}.quota.tenant`,
      threshold: `${prefix}.quota.threshold`,
      result: `${prefix}.quota.webhook.result`,
    }),
  };
}

/**
 * {@link LimiterMetrics} through an OpenTelemetry `Meter`: the same recording as the Prometheus sink, for
 * applications that export with an OpenTelemetry SDK. Attribute sets are built once per label combination and
 * reused; every attribute value passes through a closed set, so a key, IP address or token never becomes one.
 *
 * @example
 * ```ts
 * import { metrics } from '@opentelemetry/api';
 * const sink = new OtelMetrics({ meter: metrics.getMeter('sluice'), tiers: ['free', 'standard'] });
 * sink.recordDecision(limiter.check('rl.write', 'user:42'), { tier: 'free' });
 * ```
 */
export class OtelMetrics implements LimiterMetrics {
  /** The instrument names in use. */
  readonly instruments: OtelInstrumentNames;
  /** The attribute names in use. */
  readonly attributes: OtelAttributeNames;
  readonly #labels: MetricLabels;
  readonly #decisionAttrs = new ChildCache<Attributes>(METRIC_OUTCOMES.length);
  readonly #policyAttrs = new ChildCache<Attributes>(1);
  readonly #exemptAttrs = new ChildCache<Attributes>(1);
  readonly #storeAttrs = new Map<string, Attributes>();
  readonly #decisions: Counter;
  readonly #rejected: Counter;
  readonly #latency: Histogram;
  readonly #exempt: Counter;
  readonly #storeErrors: Counter;
  readonly #switches: Counter;
  readonly #denyCache: Counter;
  readonly #alerts: Counter;
  readonly #webhook: Counter;
  readonly #sources: StoreStatsSource[] = [];
  readonly #trackedKeys = new Map<string, number>();
  readonly #evictions = new Map<string, number>();
  readonly #failover = new Map<string, { active: number; attrs: Attributes }>();
  #usage: [string, number][] = [];

  /**
   * @param options - the meter, the prefix and label allow-lists and bounds.
   * @throws SluiceError `ERR_INVALID_OPTION` for an invalid option or a missing meter.
   */
  constructor(options: OtelMetricsOptions) {
    const o = objectOption('OtelMetrics options', options) as unknown as OtelMetricsOptions;
    rejectUnknownSinkKeys('OtelMetrics options', o, ['meter', 'prefix']);
    const meter = o.meter;
    if (typeof meter !== 'object' || meter === null || typeof meter.createCounter !== 'function') {
      throw invalidOption('meter', 'an OpenTelemetry Meter', meter);
    }
    const names = otelNames(o.prefix ?? 'sluice');
    this.instruments = names.instruments;
    this.attributes = names.attributes;
    this.#labels = new MetricLabels(o, 'OtelMetrics options');
    const n = this.instruments;
    this.#decisions = meter.createCounter(n.decisions, {
      description: 'Rate limit decisions by policy and outcome.',
    });
    this.#rejected = meter.createCounter(n.rejected, {
      description:
        'Requests denied by a policy (rate limit exceeded), by policy (class), tier and endpoint rule.',
    });
    this.#latency = meter.createHistogram(n.latency, {
      description: 'Time taken by a rate limit decision.',
      unit: 's',
      advice: {
        explicitBucketBoundaries: [
          0.000005, 0.00001, 0.000025, 0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025,
          0.05, 0.1, 0.25,
        ],
      },
    });
    this.#exempt = meter.createCounter(n.exempt, {
      description: 'Requests exempt from rate limiting, by reason.',
    });
    this.#storeErrors = meter.createCounter(n.storeErrors, { description: 'Store calls that failed.' });
    this.#switches = meter.createCounter(n.failoverSwitches, {
      description: 'Times a store entered its failure mode.',
    });
    this.#denyCache = meter.createCounter(n.denyCacheHits, {
      description: 'Denials answered by the local deny cache.',
    });
    this.#alerts = meter.createCounter(n.quotaAlerts, {
      description: 'Quota alerts raised, by threshold crossed.',
    });
    this.#webhook = meter.createCounter(n.webhook, { description: 'Quota webhook outcomes.' });
    const tracked: ObservableGauge = meter.createObservableGauge(n.trackedKeys, {
      description: 'Buckets held by a store now.',
    });
    tracked.addCallback((r) => this.#observeTracked(r));
    meter
      .createObservableCounter(n.evictions, {
        description: 'Buckets evicted to make room before they were full.',
      })
      .addCallback((r) => this.#observeEvictions(r));
    meter
      .createObservableGauge(n.failoverActive, {
        description: '1 while a store is in its failure mode, else 0.',
      })
      .addCallback((r) => {
        for (const f of this.#failover.values()) r.observe(f.active, f.attrs);
      });
    meter
      .createObservableGauge(n.quotaUsage, {
        description: "A tenant's usage over the quota window divided by its quota.",
        unit: '1',
      })
      .addCallback((r) => {
        for (const [tenant, ratio] of this.#usage) r.observe(ratio, { [this.attributes.tenant]: tenant });
      });
  }

  /** Reads a store's counters (tracked keys, evictions) whenever the meter collects. */
  observeStore(source: StoreStatsSource): this {
    if (typeof source !== 'object' || source === null || typeof source.stats !== 'function') {
      throw invalidOption('observeStore source', 'a store with kind and stats()', source);
    }
    this.#sources.push(source);
    return this;
  }

  recordDecision(decision: Decision, labels?: DecisionLabels, durationSeconds?: number): void {
    const g = this.#labels;
    const tier = g.tier.value(labels?.tier ?? '');
    const rule = g.rule.value(labels?.rule ?? '');
    if (decision instanceof SingleDecision) {
      const p = decision.policy;
      const policy = g.policy.value(p.name);
      this.#decisions.add(
        1,
        this.#decisionAttr(
          policy,
          tier,
          rule,
          OUTCOME_INDEX[outcomeOf(decision, p.shadow, decision.limited)],
        ),
      );
      if (decision.limited && !p.shadow) this.#rejected.add(1, this.#policyAttr(policy, tier, rule));
    } else {
      const outcomes = decision.outcomes;
      if (outcomes.length === 0) {
        const slot = OUTCOME_INDEX[decision.allowed ? 'failed_open' : 'failed_closed'];
        this.#decisions.add(1, this.#decisionAttr('', tier, rule, slot));
      }
      for (let i = 0; i < outcomes.length; i++) {
        const policy = g.policy.value(outcomes[i].policy.name);
        this.#decisions.add(
          1,
          this.#decisionAttr(policy, tier, rule, OUTCOME_INDEX[metricOutcome(decision, i)]),
        );
      }
      const violated = decision.violated;
      for (let i = 0; i < violated.length; i++) {
        this.#rejected.add(1, this.#policyAttr(g.policy.value(violated[i].policy.name), tier, rule));
      }
    }
    if (durationSeconds !== undefined && durationSeconds >= 0) {
      this.#latency.record(durationSeconds, this.#storeAttr(labels?.store ?? ''));
    }
  }

  recordExempt(labels: ExemptLabels): void {
    const g = this.#labels;
    const tier = g.tier.value(labels.tier ?? '');
    const rule = g.rule.value(labels.rule ?? '');
    const reason = g.reason.value(labels.reason);
    let attrs = this.#exemptAttrs.find(reason, tier, rule, 0);
    if (attrs === undefined) {
      const a = this.attributes;
      attrs = this.#exemptAttrs.store(
        reason,
        tier,
        rule,
        0,
        Object.freeze({ [a.reason]: reason, [a.tier]: tier, [a.rule]: rule }),
      );
    }
    this.#exempt.add(1, attrs);
    this.#decisions.add(1, this.#decisionAttr('', tier, rule, OUTCOME_INDEX.exempt));
  }

  recordStoreError(store: string): void {
    this.#storeErrors.add(1, this.#storeAttr(store));
  }

  recordFailover(store: string, mode: FailureMode, active: boolean): void {
    const s = this.#labels.store.value(store);
    const m = FAILURE_MODES.includes(mode) ? mode : OTHER_LABEL;
    const key = `${s}\u0000${m}`;
    let f = this.#failover.get(key);
    if (f === undefined) {
      f = { active: 0, attrs: Object.freeze({ [this.attributes.store]: s, [this.attributes.mode]: m }) };
      this.#failover.set(key, f);
    }
    if (active && f.active === 0) this.#switches.add(1, f.attrs);
    f.active = active ? 1 : 0;
  }

  recordDenyCacheHit(policy: string, labels?: DecisionLabels): void {
    const g = this.#labels;
    this.#denyCache.add(
      1,
      this.#policyAttr(
        g.policy.value(policy),
        g.tier.value(labels?.tier ?? ''),
        g.rule.value(labels?.rule ?? ''),
      ),
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
    this.#usage = boundedRatios(ratios, this.#labels.maxTenantSeries);
  }

  recordQuotaAlert(threshold: number): void {
    this.#alerts.add(1, { [this.attributes.threshold]: String(threshold) });
  }

  recordWebhook(result: WebhookResult): void {
    this.#webhook.add(1, { [this.attributes.result]: result });
  }

  #decisionAttr(policy: string, tier: string, rule: string, slot: number): Attributes {
    const found = this.#decisionAttrs.find(policy, tier, rule, slot);
    if (found !== undefined) return found;
    const a = this.attributes;
    const attrs = Object.freeze({
      [a.policy]: policy,
      [a.tier]: tier,
      [a.rule]: rule,
      [a.outcome]: METRIC_OUTCOMES[slot],
    });
    return this.#decisionAttrs.store(policy, tier, rule, slot, attrs);
  }

  #policyAttr(policy: string, tier: string, rule: string): Attributes {
    const found = this.#policyAttrs.find(policy, tier, rule, 0);
    if (found !== undefined) return found;
    const a = this.attributes;
    return this.#policyAttrs.store(
      policy,
      tier,
      rule,
      0,
      Object.freeze({ [a.policy]: policy, [a.tier]: tier, [a.rule]: rule }),
    );
  }

  #storeAttr(store: string): Attributes {
    const s = this.#labels.store.value(store);
    let attrs = this.#storeAttrs.get(s);
    if (attrs === undefined) {
      attrs = Object.freeze({ [this.attributes.store]: s });
      this.#storeAttrs.set(s, attrs);
    }
    return attrs;
  }

  #observeTracked(r: ObservableResult): void {
    const sums = new Map(this.#trackedKeys);
    for (const s of this.#sources) {
      const store = this.#labels.store.value(s.kind);
      sums.set(store, (sums.get(store) ?? 0) + s.stats().trackedKeys);
    }
    for (const [store, v] of sums) r.observe(v, this.#storeAttr(store));
  }

  #observeEvictions(r: ObservableResult): void {
    const sums = new Map(this.#evictions);
    for (const s of this.#sources) {
      const store = this.#labels.store.value(s.kind);
      sums.set(store, (sums.get(store) ?? 0) + s.stats().evictions);
    }
    for (const [store, v] of sums) r.observe(v, this.#storeAttr(store));
  }
}
