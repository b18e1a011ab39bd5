import type { Decision } from '../core/index.js';
import type {
  DecisionLabels,
  ExemptLabels,
  FailureMode,
  LimiterMetrics,
  QueueWaitResult,
  WebhookResult,
} from './limiter-metrics.js';

/**
 * A {@link LimiterMetrics} that records nothing: the default when no metrics are configured, and a base class for
 * sinks that care about a few calls only (override those).
 *
 * @example
 * ```ts
 * class DenialLog extends NoopMetrics {
 *   override recordDecision(d: Decision): void { if (!d.allowed) console.log('denied', d.reason); }
 * }
 * ```
 */
export class NoopMetrics implements LimiterMetrics {
  recordDecision(_decision: Decision, _labels?: DecisionLabels, _durationSeconds?: number): void {}
  recordExempt(_labels: ExemptLabels): void {}
  recordStoreError(_store: string): void {}
  recordFailover(_store: string, _mode: FailureMode, _active: boolean): void {}
  recordDenyCacheHit(_policy: string, _labels?: DecisionLabels): void {}
  setTrackedKeys(_store: string, _count: number): void {}
  recordEvictions(_store: string, _count: number): void {}
  setQuotaUsage(_ratios: ReadonlyMap<string, number>): void {}
  recordQuotaAlert(_threshold: number): void {}
  recordWebhook(_result: WebhookResult): void {}
  setQueueLength(_policy: string, _length: number): void {}
  recordQueueWait(_policy: string, _seconds: number, _result: QueueWaitResult): void {}
}

/** A shared {@link NoopMetrics}. */
export const noopMetrics: LimiterMetrics = Object.freeze(new NoopMetrics());
