export { fullJitterDelayMs } from './backoff.js';
export {
  type BucketFacts,
  type BucketObservation,
  type BucketView,
  bucketAt,
  type CapacityBounds,
  mergeCapacity,
  nextPassDelayMs,
  observeCapacity,
} from './bucket-estimate.js';
export { createClient, type SluiceClient } from './client.js';
export {
  CLIENT_DEFAULTS,
  type ClientOptions,
  type FetchFunction,
  type ResolvedClientOptions,
  type RetryContext,
  resolveClientOptions,
} from './client-options.js';
export { isIdempotent } from './idempotency.js';
export { type GiveUpReason, RateLimitExceededError } from './rate-limit-exceeded-error.js';
export {
  type LegacyFields,
  parseLegacyRateLimit,
  parseRateLimit,
  parseRateLimitPolicy,
  parseXRateLimit,
  type QuotaPolicyItem,
  type QuotaStateItem,
  type XRateLimitFields,
} from './rate-limit-fields.js';
export {
  type RateLimitEntry,
  type RateLimitListener,
  type RateLimitSnapshot,
  RateLimitState,
} from './rate-limit-state.js';
export {
  type HeaderSource,
  type RateLimitForm,
  type RateLimitObservation,
  readRateLimitHeaders,
  responseTime,
} from './read-rate-limit-headers.js';
export { parseHttpDate, parseRetryAfter } from './retry-after.js';
export {
  defineRateLimitStatus,
  type RateLimitStatusElement,
  type RateLimitStatusOptions,
  type RateLimitStatusSource,
} from './status-element.js';
export {
  DEFAULT_STATUS_MESSAGES,
  formatCountdown,
  mostConstrained,
  nextChangeAt,
  type RateLimitStatusMessages,
  type StatusLevel,
  type StatusView,
  statusView,
} from './status-format.js';
