export { ChildCache } from './child-cache.js';
export { combineMetrics } from './combine-metrics.js';
export { decideWithMetrics, type Stopwatch } from './decide-with-metrics.js';
export { LabelGuard, OTHER_LABEL } from './label-guard.js';
export {
  type DecisionLabels,
  type ExemptLabels,
  FAILURE_MODES,
  type FailureMode,
  type LimiterMetrics,
  METRIC_OUTCOMES,
  type MetricOutcome,
  QUEUE_WAIT_RESULTS,
  type QueueWaitResult,
  type StoreStatsSource,
  type WebhookResult,
} from './limiter-metrics.js';
export {
  boundedRatios,
  LABEL_OPTION_KEYS,
  type LabelOptions,
  MetricLabels,
  rejectUnknownSinkKeys,
} from './metric-labels.js';
export { metricOutcome, OUTCOME_INDEX, outcomeOf } from './metric-outcome.js';
export { NoopMetrics, noopMetrics } from './noop-metrics.js';
export { type FailoverSource, reportFailovers } from './report-failovers.js';
export { reportStoreEvents, type StoreEventSource } from './report-store-events.js';
export { isStoreStatsSource } from './store-stats.js';
