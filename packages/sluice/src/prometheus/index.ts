export { CellHistogram, DEFAULT_LATENCY_BUCKETS } from './cell-histogram.js';
export { metricsHandler } from './metrics-handler.js';
export {
  type PrometheusMetricNames,
  type PrometheusMetricsOptions,
  prometheusMetricNames,
} from './prometheus-metric-names.js';
export { PrometheusMetrics } from './prometheus-metrics.js';
export { PrometheusSettleMetrics, type PrometheusSettleMetricsOptions } from './settle-metrics.js';
