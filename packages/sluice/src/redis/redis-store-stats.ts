import type { FailureMode } from './failure-mode.js';

/** Counters of a {@link RedisStore}, monotonic since construction, for metrics exporters. */
export interface RedisStoreStats {
  /** `redis` while Redis answers, `fallback` while the failure mode decides. */
  readonly state: 'redis' | 'fallback';
  readonly failureMode: FailureMode;
  /** decide, reserve and peek calls. */
  readonly decisions: number;
  /** Of those, answered by the script. */
  readonly redisDecisions: number;
  /** Of those, denied by the local deny cache without a round trip. */
  readonly denyCacheHits: number;
  /** Of those, answered by the failure mode (Redis down, slow or breaker open). */
  readonly fallbackDecisions: number;
  /** Script calls sent (each is one round trip carrying one or more batched calls). */
  readonly scriptCalls: number;
  /** Calls that carried more than one entry. */
  readonly batchedScriptCalls: number;
  /** Script calls that failed (error or timeout). */
  readonly errors: number;
  /** Of those, timeouts. */
  readonly timeouts: number;
  /** NOSCRIPT replies recovered by EVAL (after a restart, failover or SCRIPT FLUSH). */
  readonly scriptReloads: number;
  /** Switches to the failure mode. */
  readonly failovers: number;
  /** Switches back to Redis. */
  readonly recoveries: number;
  /** Probes sent while switched. */
  readonly probes: number;
  /** Refunds and settled costs lost because Redis did not answer (failure modes `open` and `closed`). */
  readonly droppedRefunds: number;
  /** Buckets held by the deny cache now. */
  readonly denyCacheSize: number;
  /**
   * Buckets this process holds for the store now: deny cache entries and the `local` failure mode's buckets.
   * The buckets in Redis are not counted (they are Redis's, and expire there on their own); this is the figure
   * a `tracked_keys` gauge shows for a Redis store.
   */
  readonly trackedKeys: number;
  /** Buckets the `local` failure mode evicted to make room (a counter, like the memory store's). */
  readonly evictions: number;
}

type Mutable<T> = { -readonly [K in keyof T]: T[K] };

/** The counters a store bumps as it works; the rest of {@link RedisStoreStats} is read when asked. */
export type RedisStoreCounters = Omit<
  Mutable<RedisStoreStats>,
  'state' | 'failureMode' | 'denyCacheSize' | 'trackedKeys' | 'evictions'
>;

/** Fresh counters, all zero. */
export function newCounters(): RedisStoreCounters {
  return {
    decisions: 0,
    redisDecisions: 0,
    denyCacheHits: 0,
    fallbackDecisions: 0,
    scriptCalls: 0,
    batchedScriptCalls: 0,
    errors: 0,
    timeouts: 0,
    scriptReloads: 0,
    failovers: 0,
    recoveries: 0,
    probes: 0,
    droppedRefunds: 0,
  };
}
