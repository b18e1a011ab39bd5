export { MemoryQuotaStore, type MemoryQuotaStoreOptions } from './memory-quota-store.js';
export type { BucketCounts, QuotaStore } from './quota-store.js';
export { QuotaTracker } from './quota-tracker.js';
export type {
  QuotaAlert,
  QuotaLookup,
  QuotaTrackerOptions,
  TenantTotal,
  TenantUsage,
} from './quota-tracker-options.js';
export { QuotaWebhook, type QuotaWebhookOptions } from './quota-webhook.js';
export { type QuotaRedisClient, RedisQuotaStore, type RedisQuotaStoreOptions } from './redis-quota-store.js';
export { type HeavyHitter, SpaceSaving } from './space-saving.js';
export { bucketStart, windowBuckets } from './time-buckets.js';
export { type LimitedKey, TopLimitedKeys, type TopLimitedKeysOptions } from './top-limited-keys.js';
export { wallClock } from './wall-clock.js';
export { signWebhook, type VerifyWebhookOptions, verifyWebhookSignature } from './webhook-signature.js';
