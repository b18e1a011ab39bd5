import type { Clock } from '../core/index.js';
import { invalidOption } from '../core/index.js';
import type { LimiterMetrics } from '../metrics/index.js';
import type { QuotaStore } from './quota-store.js';
import type { QuotaWebhook, QuotaWebhookOptions } from './quota-webhook.js';

/** A tenant's quota per window: a fixed table, or a function (for example from the tenant's tier). */
export type QuotaLookup = Readonly<Record<string, number>> | ((tenant: string) => number | undefined);

/** Options of {@link QuotaTracker}. */
export interface QuotaTrackerOptions {
  /** Where usage lives. Default a new {@link MemoryQuotaStore}; a `RedisQuotaStore` shares it across a fleet. */
  readonly store?: QuotaStore;
  /** Length of the rolling window in seconds. Default 3,600 (one hour), as in the contract. */
  readonly windowSeconds?: number;
  /** Size of a time bucket in seconds; must divide the window. Default 60. */
  readonly bucketSeconds?: number;
  /** Each tenant's quota over the window; tenants without one are tracked but raise no alert. */
  readonly quotas?: QuotaLookup;
  /** Quota of tenants the lookup does not name. Default none. */
  readonly defaultQuota?: number;
  /** Ratios of the quota that raise an alert when crossed, ascending, each in (0, 10]. Default [0.8, 1]. */
  readonly thresholds?: readonly number[];
  /** How far below a threshold usage must fall before its next crossing alerts again. In [0, 1); default 0.05. */
  readonly hysteresis?: number;
  /** Milliseconds between flushes to the store; 0 turns the timer off (call `flush()`). Default 1,000. */
  readonly flushIntervalMs?: number;
  /** Tenants waiting in memory for the next flush at most; more are dropped and counted. Default 100,000. */
  readonly maxPendingTenants?: number;
  /** Wall-clock time (buckets are shared by the fleet). Default the system clock. */
  readonly clock?: Clock;
  /** Where quota usage ratios and alerts are recorded. */
  readonly metrics?: LimiterMetrics;
  /** Tenants reported to `metrics.setQuotaUsage` at most (those nearest their quota). Default 100. */
  readonly maxTenantSeries?: number;
  /** Log hook: called with one line per alert, for example `(line) => logger.warn(line)`. */
  readonly log?: (line: string, alert: QuotaAlert) => void;
  /** Optional webhook for alerts: options or a {@link QuotaWebhook}. */
  readonly webhook?: QuotaWebhook | QuotaWebhookOptions;
}

/** A tenant crossed a threshold of its quota. */
export interface QuotaAlert {
  /** Always `quota.threshold_crossed`. */
  readonly type: 'quota.threshold_crossed';
  readonly tenant: string;
  /** The ratio crossed, for example 0.8. */
  readonly threshold: number;
  /** Usage over the window when the crossing was seen. */
  readonly usage: number;
  /** The tenant's quota over the window. */
  readonly quota: number;
  /** `usage / quota`. */
  readonly ratio: number;
  readonly windowSeconds: number;
  /** Wall-clock time of the crossing, ISO 8601. */
  readonly at: string;
}

/** A tenant's usage over the window. */
export interface TenantUsage {
  readonly tenant: string;
  /** Usage over the window, over every endpoint category. */
  readonly total: number;
  /** The tenant's quota, when it has one. */
  readonly quota: number | undefined;
  /** `total / quota`, when it has a quota. */
  readonly ratio: number | undefined;
  /** Usage by endpoint category. */
  readonly categories: Readonly<Record<string, number>>;
  readonly windowSeconds: number;
  readonly bucketSeconds: number;
}

/** One row of {@link QuotaTracker.topTenants}. */
export interface TenantTotal {
  readonly tenant: string;
  readonly total: number;
  readonly quota: number | undefined;
  readonly ratio: number | undefined;
}

/** Every option name of {@link QuotaTrackerOptions}, for `rejectUnknownKeys`. */
export const QUOTA_TRACKER_OPTIONS = [
  'store',
  'windowSeconds',
  'bucketSeconds',
  'quotas',
  'defaultQuota',
  'thresholds',
  'hysteresis',
  'flushIntervalMs',
  'maxPendingTenants',
  'clock',
  'metrics',
  'maxTenantSeries',
  'log',
  'webhook',
];

/** Validates `thresholds`: an ascending array of 1 to 10 ratios in (0, 10]; default 0.8 and 1. */
export function thresholdsOption(value: unknown): number[] {
  if (value === undefined) return [0.8, 1];
  if (
    !Array.isArray(value) ||
    value.length === 0 ||
    value.length > 10 ||
    value.some((v, i) => typeof v !== 'number' || !(v > 0 && v <= 10) || (i > 0 && v <= value[i - 1]))
  ) {
    throw invalidOption('thresholds', 'an ascending array of 1 to 10 ratios in (0, 10]', value);
  }
  return [...value];
}
