import type { Decision } from '../core/index.js';

/**
 * What one policy saw in one request, as a metric label value. A closed set, so a dashboard can list every series
 * in advance:
 * - `allowed`: the policy had the tokens and the request went ahead.
 * - `limited`: an enforcing policy lacked the tokens and denied the request.
 * - `shadow_limited`: a shadow policy would have denied (it never does).
 * - `denied_by_other`: the policy had the tokens, but another policy denied, so nothing was taken (all or nothing).
 * - `exempt`: the request matched an exemption and no policy was checked.
 * - `failed_open`: the store could not answer and its failure mode admitted the request.
 * - `failed_closed`: the store could not answer and its failure mode denied the request.
 */
export type MetricOutcome =
  | 'allowed'
  | 'limited'
  | 'shadow_limited'
  | 'denied_by_other'
  | 'exempt'
  | 'failed_open'
  | 'failed_closed';

/** Every {@link MetricOutcome}, in a fixed order (its index is used to cache metric children). */
export const METRIC_OUTCOMES: readonly MetricOutcome[] = Object.freeze([
  'allowed',
  'limited',
  'shadow_limited',
  'denied_by_other',
  'exempt',
  'failed_open',
  'failed_closed',
]);

/**
 * Labels that describe where a decision was made, taken from configuration (closed sets), never from the request:
 * a key, IP address, token or tenant id is never a label.
 */
export interface DecisionLabels {
  /** The tier of the caller, for example `free`, `standard`, `enterprise`. Empty when tiers are not used. */
  readonly tier?: string;
  /** The endpoint rule that matched, by its configured name or pattern, for example `/api/risk/simulation/*`. */
  readonly rule?: string;
  /** The kind of store that decided (`memory`, `redis`); labels the latency histogram. */
  readonly store?: string;
}

/** Labels of an exempt request. */
export interface ExemptLabels extends DecisionLabels {
  /** Why it was exempt, from a closed set such as `endpoint`, `client`, `tier`, `development`. */
  readonly reason: string;
}

/**
 * How a store behaves while it cannot answer: admit (`open`), deny (`closed`), or decide with an in-process limiter
 * (`local`, the Redis store's default). The same values as the Redis store's `failureMode`.
 */
export type FailureMode = 'open' | 'closed' | 'local';

/** Every {@link FailureMode}: the closed set of the `mode` label. */
export const FAILURE_MODES: readonly FailureMode[] = Object.freeze(['open', 'closed', 'local']);

/**
 * How a wait in a queue ended: `admitted` when its tokens came due, `abandoned` when the client went away first.
 * A request refused because the queue was full never waited: it is a `limited` decision.
 */
export type QueueWaitResult = 'admitted' | 'abandoned';

/** Every {@link QueueWaitResult}: the closed set of the `result` label. */
export const QUEUE_WAIT_RESULTS: readonly QueueWaitResult[] = Object.freeze(['admitted', 'abandoned']);

/** The outcome of one quota webhook attempt or delivery. */
export type WebhookResult = 'delivered' | 'retried' | 'failed' | 'dropped';

/**
 * A store whose counters can be read at scrape time, such as `MemoryStore` (its `stats()`). Reading them when
 * metrics are collected keeps the decision path free of metric work.
 */
export interface StoreStatsSource {
  /** The store kind, used as the `store` label. */
  readonly kind: string;
  /** A snapshot: buckets held now and buckets evicted so far (a counter that only grows). */
  stats(): { readonly trackedKeys: number; readonly evictions: number };
}

/**
 * The framework-neutral recording interface of Sluice. The HTTP layer, the adapters and the gateway call it; the
 * Prometheus (`sluice/prometheus`) and OpenTelemetry (`sluice/otel`) implementations turn the calls into series,
 * and {@link combineMetrics} fans one call out to several sinks. Implementations must never throw and must not
 * allocate per call for label combinations already seen, because `recordDecision` runs once per request.
 *
 * @example
 * ```ts
 * const metrics: LimiterMetrics = new PrometheusMetrics({ prefix: 'acme' });
 * const d = limiter.check('rl.write', 'user:42');
 * metrics.recordDecision(d, { tier: 'standard', rule: '/api/*', store: 'memory' }, 0.00002);
 * ```
 */
export interface LimiterMetrics {
  /**
   * Records one decision: one `decisions` count per policy with its {@link MetricOutcome}, one `rate limit
   * exceeded` count per enforcing policy that denied, and the latency when given.
   *
   * @param decision - the decision returned by the limiter.
   * @param labels - tier, endpoint rule and store kind, from configuration.
   * @param durationSeconds - how long the decision took, in seconds, when measured.
   */
  recordDecision(decision: Decision, labels?: DecisionLabels, durationSeconds?: number): void;
  /** Records a request that matched an exemption (no policy was checked). */
  recordExempt(labels: ExemptLabels): void;
  /** Records a store call that failed (timeout, connection lost, script error). */
  recordStoreError(store: string): void;
  /**
   * Records that a store entered (`active: true`) or left (`active: false`) its failure mode. Entering counts
   * one switch; the active gauge follows the state.
   */
  recordFailover(store: string, mode: FailureMode, active: boolean): void;
  /** Records a denial answered from the local deny cache without asking the store. */
  recordDenyCacheHit(policy: string, labels?: DecisionLabels): void;
  /** Sets the number of buckets a store holds now (for stores that push it rather than being observed). */
  setTrackedKeys(store: string, count: number): void;
  /** Adds buckets evicted to make room (for stores that push it rather than being observed). */
  recordEvictions(store: string, count: number): void;
  /**
   * Replaces the quota usage ratios by tenant (usage over the window divided by the tenant's quota). The caller
   * bounds the map (for example the tenants nearest their quota); tenants absent from it lose their series.
   */
  setQuotaUsage(ratios: ReadonlyMap<string, number>): void;
  /** Records a quota alert raised when a tenant crossed `threshold` (a ratio, 0.8 for 80%). */
  recordQuotaAlert(threshold: number): void;
  /** Records the outcome of a quota webhook attempt or delivery. */
  recordWebhook(result: WebhookResult): void;
  /**
   * Sets how many requests wait now in the queue of a policy (one call per change). Optional, so that sinks
   * written before queues existed still compile; {@link NoopMetrics} has it.
   */
  setQueueLength?(policy: string, length: number): void;
  /** Records how long a request waited in a policy's queue, in seconds, and how the wait ended. Optional. */
  recordQueueWait?(policy: string, seconds: number, result: QueueWaitResult): void;
}
