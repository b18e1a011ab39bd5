export {
  type OtelAttributeNames,
  type OtelInstrumentNames,
  OtelMetrics,
  type OtelMetricsOptions,
  otelNames,
} from './otel-metrics.js';
