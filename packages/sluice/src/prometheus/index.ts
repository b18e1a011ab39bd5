export { CellHistogram, DEFAULT_LATENCY_BUCKETS } from './cell-histogram.js';
export { metricsHandler } from './metrics-handler.js';
export {
  type PrometheusMetricNames,
  PrometheusMetrics,
  type PrometheusMetricsOptions,
  prometheusMetricNames,
} from './prometheus-metrics.js';
