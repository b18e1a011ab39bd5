import type { Registry } from 'prom-client';
import { invalidOption } from '../core/index.js';
import type { LabelOptions } from '../metrics/index.js';

/** Options of {@link PrometheusMetrics}. */
export interface PrometheusMetricsOptions extends LabelOptions {
  /** Metric name prefix (white label): `<prefix>_rate_limit_exceeded_total`. Default `sluice`. */
  readonly prefix?: string;
  /** The registry to register in; default a new one (never prom-client's global registry). */
  readonly registry?: Registry;
  /** Upper bounds, in seconds, of the decision latency histogram; ascending, finite, positive. */
  readonly latencyBuckets?: readonly number[];
  /** Also collect prom-client's process metrics (CPU, memory, event loop) with the same prefix. Default false. */
  readonly processMetrics?: boolean;
}

/** The names of the metrics of a {@link PrometheusMetrics}, by role. */
export interface PrometheusMetricNames {
  readonly decisions: string;
  readonly exceeded: string;
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
  readonly queueLength: string;
  readonly queueWait: string;
}

const PREFIX = /^[a-zA-Z_][a-zA-Z0-9_]*$/;

/**
 * The metric names for a prefix. The names are part of the public contract (dashboards and alert rules use them);
 * docs/DECISIONS.md lists them.
 *
 * @throws SluiceError `ERR_INVALID_OPTION` when the prefix is not a valid metric name start.
 */
export function prometheusMetricNames(prefix = 'sluice'): PrometheusMetricNames {
  if (typeof prefix !== 'string' || !PREFIX.test(prefix)) {
    throw invalidOption('prefix', 'a metric name prefix matching [a-zA-Z_][a-zA-Z0-9_]*', prefix);
  }
  return Object.freeze({
    decisions: `${prefix}_decisions_total`,
    exceeded: `${prefix}_rate_limit_exceeded_total`,
    latency: `${prefix}_decision_duration_seconds`,
    exempt: `${prefix}_exempt_total`,
    trackedKeys: `${prefix}_tracked_keys`,
    evictions: `${prefix}_evictions_total`,
    storeErrors: `${prefix}_store_errors_total`,
    failoverSwitches: `${prefix}_store_failure_mode_switches_total`,
    failoverActive: `${prefix}_store_failure_mode_active`,
    denyCacheHits: `${prefix}_deny_cache_hits_total`,
    quotaUsage: `${prefix}_quota_usage_ratio`,
    quotaAlerts: `${prefix}_quota_alerts_total`,
    webhook: `${prefix}_quota_webhook_deliveries_total`,
    queueLength: `${prefix}_queue_length`,
    queueWait: `${prefix}_queue_wait_seconds`,
  });
}
