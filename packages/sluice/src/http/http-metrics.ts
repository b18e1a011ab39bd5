import { invalidOption, type MaybePromise } from '../core/index.js';
import type { DecisionLabels, LimiterMetrics } from '../metrics/limiter-metrics.js';
import { isPromiseLike } from './maybe-promise.js';
import type { Verdict } from './types.js';

/** The part of a metrics sink the HTTP layer calls; the others (`recordExempt`, `recordStoreError`) when present. */
export type HttpMetricsSink = Pick<LimiterMetrics, 'recordDecision'> &
  Partial<Pick<LimiterMetrics, 'recordExempt' | 'recordStoreError'>>;

/**
 * Validates the `metrics` option of createHttpLimiter: a sink with `recordDecision`, as `PrometheusMetrics`
 * (`sluice/prometheus`) and `OtelMetrics` (`sluice/otel`) are.
 *
 * @throws SluiceError `ERR_INVALID_OPTION` naming the option, the expectation and the given value.
 */
export function metricsOption(value: unknown): HttpMetricsSink | undefined {
  if (value === undefined) return undefined;
  const v = value as Partial<Record<'recordDecision' | 'recordExempt' | 'recordStoreError', unknown>> | null;
  if (typeof v !== 'object' || v === null || typeof v.recordDecision !== 'function') {
    throw invalidOption(
      'metrics',
      'a LimiterMetrics sink with recordDecision (sluice/prometheus, sluice/otel)',
      value,
    );
  }
  for (const m of ['recordExempt', 'recordStoreError'] as const) {
    if (v[m] !== undefined && typeof v[m] !== 'function')
      throw invalidOption(`metrics.${m}`, 'a function', v[m]);
  }
  return v as HttpMetricsSink;
}

/** Labels by tier and rule: one frozen object per pair, so recording allocates nothing after the first time. */
class LabelCache {
  readonly #byKey = new Map<string, DecisionLabels>();
  constructor(readonly store: string) {}
  of(v: Verdict): DecisionLabels {
    const tier = v.identity?.tier ?? '';
    const rule = v.rules?.[0] ?? '';
    const key = `${tier}\n${rule}`;
    let l = this.#byKey.get(key);
    if (l === undefined) {
      l = Object.freeze({ tier, rule, store: this.store });
      // Tiers and rules come from configuration; the bound only guards against an unbounded identify().
      if (this.#byKey.size < 10_000) this.#byKey.set(key, l);
    }
    return l;
  }
}

/**
 * Wraps `evaluate` so that every verdict is recorded: its decision (`recordDecision`, which counts the
 * `rate limit exceeded` series of a denial), an exemption (`recordExempt`) and a store that could not answer
 * (`recordStoreError`). Only a limiter given a sink is wrapped: without one, `evaluate` is the original function.
 *
 * @param evaluate - the limiter's own evaluate.
 * @param sink - the validated sink.
 * @param store - the store kind, for the `store` label.
 */
export function recordingEvaluate<R>(
  evaluate: (request: R) => MaybePromise<Verdict>,
  sink: HttpMetricsSink,
  store: string,
): (request: R) => MaybePromise<Verdict> {
  const labels = new LabelCache(store);
  const record = (v: Verdict): Verdict => {
    if (v.decision !== undefined) sink.recordDecision(v.decision, labels.of(v));
    else if (v.action === 'exempt') {
      const l = labels.of(v);
      sink.recordExempt?.({ reason: v.exemptReason ?? 'endpoint', tier: l.tier, rule: l.rule });
    } else if (v.outcome === 'store_unavailable' || v.outcome === 'store_unavailable_open') {
      sink.recordStoreError?.(store);
    }
    return v;
  };
  return (request) => {
    const v = evaluate(request);
    return isPromiseLike(v) ? v.then(record) : record(v);
  };
}
