import type { Decision } from '../core/index.js';
import type {
  DecisionLabels,
  ExemptLabels,
  FailureMode,
  LimiterMetrics,
  QueueWaitResult,
  WebhookResult,
} from './limiter-metrics.js';
import { noopMetrics } from './noop-metrics.js';

/**
 * One {@link LimiterMetrics} that forwards every call to each sink in turn, for example Prometheus plus the top
 * limited keys of the admin API. A sink that throws does not stop the others, and the error never reaches the
 * request: metrics must not change a decision.
 *
 * @param sinks - the sinks, called in order.
 * @returns a single sink (the no-op sink when none is given, the sink itself when one is given).
 *
 * @example
 * ```ts
 * const metrics = combineMetrics(new PrometheusMetrics(), topLimitedKeys);
 * ```
 */
export function combineMetrics(...sinks: LimiterMetrics[]): LimiterMetrics {
  if (sinks.length === 0) return noopMetrics;
  if (sinks.length === 1) return sinks[0];
  return new CombinedMetrics(sinks);
}

class CombinedMetrics implements LimiterMetrics {
  readonly #sinks: readonly LimiterMetrics[];

  constructor(sinks: LimiterMetrics[]) {
    this.#sinks = Object.freeze([...sinks]);
  }

  recordDecision(decision: Decision, labels?: DecisionLabels, durationSeconds?: number): void {
    for (const s of this.#sinks) {
      try {
        s.recordDecision(decision, labels, durationSeconds);
      } catch {
        // A broken sink must not fail a request or starve the other sinks.
      }
    }
  }

  recordExempt(labels: ExemptLabels): void {
    this.#each((s) => s.recordExempt(labels));
  }

  recordStoreError(store: string): void {
    this.#each((s) => s.recordStoreError(store));
  }

  recordFailover(store: string, mode: FailureMode, active: boolean): void {
    this.#each((s) => s.recordFailover(store, mode, active));
  }

  recordDenyCacheHit(policy: string, labels?: DecisionLabels): void {
    this.#each((s) => s.recordDenyCacheHit(policy, labels));
  }

  setTrackedKeys(store: string, count: number): void {
    this.#each((s) => s.setTrackedKeys(store, count));
  }

  recordEvictions(store: string, count: number): void {
    this.#each((s) => s.recordEvictions(store, count));
  }

  setQuotaUsage(ratios: ReadonlyMap<string, number>): void {
    this.#each((s) => s.setQuotaUsage(ratios));
  }

  recordQuotaAlert(threshold: number): void {
    this.#each((s) => s.recordQuotaAlert(threshold));
  }

  recordWebhook(result: WebhookResult): void {
    this.#each((s) => s.recordWebhook(result));
  }

  setQueueLength(policy: string, length: number): void {
    this.#each((s) => s.setQueueLength?.(policy, length));
  }

  recordQueueWait(policy: string, seconds: number, result: QueueWaitResult): void {
    this.#each((s) => s.recordQueueWait?.(policy, seconds, result));
  }

  #each(call: (s: LimiterMetrics) => void): void {
    for (const s of this.#sinks) {
      try {
        call(s);
      } catch {
        // See recordDecision: isolation between sinks.
      }
    }
  }
}
