import promClient from 'prom-client';
import type { Decision } from 'sluice';
import {
  combineMetrics,
  type DecisionLabels,
  type ExemptLabels,
  type FailureMode,
  type LimiterMetrics,
} from 'sluice/metrics';
import { PrometheusMetrics, type PrometheusMetricsOptions } from 'sluice/prometheus';

/**
 * Why the gateway answered an admitted request itself instead of sending it upstream: no upstream connection
 * freed within `upstream.queueTimeout` (503), or the client already streamed `upstream.maxBodiesPerClient` bodies
 * (429).
 */
export type UpstreamRefusal = 'queue_timeout' | 'client_bodies';

/**
 * The gateway's Prometheus sink that also hands every recording to further sinks (the dashboard's rate window and
 * top limited keys). It stays a `PrometheusMetrics`, so the gateway keeps serving `/metrics` from its registry and
 * its call sites do not change; a sink that throws never reaches the request (see `combineMetrics`).
 *
 * @example
 * ```ts
 * const rates = new RateWindow();
 * const metrics = new TappedMetrics([rates], { prefix: 'acme' });
 * metrics.recordExempt({ reason: 'endpoint' }); // counted in Prometheus and in the rate window
 * ```
 */
export class TappedMetrics extends PrometheusMetrics {
  readonly #tap: LimiterMetrics;
  readonly #sinks: readonly LimiterMetrics[];
  readonly #blocked: promClient.Counter<'status'>;
  readonly #queueTimeouts: promClient.Counter;
  readonly #bodiesRefused: promClient.Counter;

  /**
   * @param sinks - the sinks that receive every call after Prometheus.
   * @param options - the Prometheus options.
   * @throws SluiceError `ERR_INVALID_OPTION` for an invalid Prometheus option.
   */
  constructor(sinks: readonly LimiterMetrics[], options: PrometheusMetricsOptions = {}) {
    super(options);
    this.#sinks = Object.freeze([...sinks]);
    // combineMetrics isolates each sink: one that throws cannot starve the others or fail a request.
    this.#tap = combineMetrics(...sinks, NEVER_THROWS);
    this.#blocked = new promClient.Counter({
      name: `${options.prefix ?? 'sluice'}_blocked_total`,
      help: 'Requests refused by a run-time block (an operator block or a penalty block), by the status they got.',
      labelNames: ['status'],
      registers: [this.registry],
    });
    // Two counters rather than one with a reason label: the first is the upstream's capacity (alert on it), the
    // second one client's behaviour.
    this.#queueTimeouts = new promClient.Counter({
      name: `${options.prefix ?? 'sluice'}_upstream_queue_timeouts_total`,
      help: 'Admitted requests answered 503 because no upstream connection became free within upstream.queueTimeout.',
      registers: [this.registry],
    });
    this.#bodiesRefused = new promClient.Counter({
      name: `${options.prefix ?? 'sluice'}_upstream_bodies_refused_total`,
      help: 'Admitted requests answered 429 because their client already streamed upstream.maxBodiesPerClient request bodies.',
      registers: [this.registry],
    });
  }

  /**
   * Counts an admitted request the gateway answered itself instead of sending it upstream. Prometheus only: the
   * dashboard's sinks count decisions, and this request was admitted.
   *
   * @param reason - why it was not sent.
   */
  recordUpstreamRefusal(reason: UpstreamRefusal): void {
    (reason === 'queue_timeout' ? this.#queueTimeouts : this.#bodiesRefused).inc();
  }

  /**
   * Counts a request refused by a run-time block: no bucket decided it, so no decision records it. The sinks
   * that count requests (the dashboard's rate window) count it as denied.
   *
   * @param status - the answer, 403 or 429.
   * @param tier - the caller's tier, if known.
   */
  recordBlocked(status: 403 | 429, tier: string | undefined): void {
    this.#blocked.inc({ status: String(status) });
    for (const s of this.#sinks) {
      try {
        (s as { recordBlocked?: (tier: string | undefined) => void }).recordBlocked?.(tier);
      } catch {
        // As for every other recording: a broken sink never fails a request.
      }
    }
  }

  override recordDecision(decision: Decision, labels?: DecisionLabels, durationSeconds?: number): void {
    super.recordDecision(decision, labels, durationSeconds);
    // The per-request call loops here rather than through combineMetrics: one call level less on the hot path.
    const sinks = this.#sinks;
    for (let i = 0; i < sinks.length; i++) {
      try {
        sinks[i].recordDecision(decision, labels, durationSeconds);
      } catch {
        // A broken dashboard sink must not fail a request or starve the other sinks.
      }
    }
  }

  override recordExempt(labels: ExemptLabels): void {
    super.recordExempt(labels);
    this.#tap.recordExempt(labels);
  }

  override recordStoreError(store: string): void {
    super.recordStoreError(store);
    this.#tap.recordStoreError(store);
  }

  override recordFailover(store: string, mode: FailureMode, active: boolean): void {
    super.recordFailover(store, mode, active);
    this.#tap.recordFailover(store, mode, active);
  }

  override recordDenyCacheHit(policy: string, labels?: DecisionLabels): void {
    super.recordDenyCacheHit(policy, labels);
    this.#tap.recordDenyCacheHit(policy, labels);
  }

  override setTrackedKeys(store: string, count: number): void {
    super.setTrackedKeys(store, count);
    this.#tap.setTrackedKeys(store, count);
  }

  override recordEvictions(store: string, count: number): void {
    super.recordEvictions(store, count);
    this.#tap.recordEvictions(store, count);
  }

  override setQuotaUsage(ratios: ReadonlyMap<string, number>): void {
    super.setQuotaUsage(ratios);
    this.#tap.setQuotaUsage(ratios);
  }
}

/**
 * A no-op member that keeps the combination a real fan-out (with one sink, `combineMetrics` returns the sink
 * itself, without its isolation from exceptions).
 */
const NEVER_THROWS: LimiterMetrics = combineMetrics();
