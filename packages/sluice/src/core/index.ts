export {
  isFullAt,
  msUntil,
  nextLast,
  refill,
  remainingTokens,
  retryAfterSeconds,
  secondsUntilFull,
} from './bucket-math.js';
export { type Clock, monotonicClock } from './clock.js';
export { type Decision, type DecisionReason, NO_OUTCOMES, type PolicyOutcome } from './decision.js';
export { ErrorCode, SluiceError } from './errors.js';
export { type EvaluateMode, evaluate } from './evaluate.js';
export { keyAsPattern } from './key-pattern.js';
export { type CheckInput, Limiter, type LimiterOptions, type WaitOptions } from './limiter.js';
export { ManualClock } from './manual-clock.js';
export { ManyDecision } from './many-decision.js';
export {
  booleanOption,
  describeValue,
  integerOption,
  invalidOption,
  objectOption,
  rejectUnknownKeys,
  stringOption,
} from './options.js';
export {
  AUTOMATIC_HISTORY_LIMIT,
  describeEffect,
  describeOverride,
  EMPTY_OVERRIDES,
  MAX_OVERRIDE_SECONDS,
  OVERRIDE_HISTORY_LIMIT,
  type OverrideChange,
  type OverrideEffect,
  type OverrideRule,
  type OverrideSnapshot,
  type OverrideStore,
  type OverrideWriteOptions,
  overrideId,
} from './override.js';
export {
  checkOverridePattern,
  type OverrideInput,
  parseOverride,
  readStoredOverride,
} from './override-parse.js';
export { checkOverrideReason, MAX_OVERRIDE_REASON } from './override-reason.js';
export { keepsOverride, liveOverrides, withChange, withOverride } from './override-writes.js';
export { plainDecision } from './plain-decision.js';
export {
  definePolicy,
  overridePolicy,
  type Policy,
  type PolicyOptions,
  type QueueOptions,
  type RefillOptions,
} from './policy.js';
export { settledUnits } from './settle-math.js';
export { SingleDecision } from './single-decision.js';
export type { Check, MaybePromise, RateLimitStore } from './store.js';
export { parseZonedTime } from './zoned-time.js';
