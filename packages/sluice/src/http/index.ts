export { type ClientIpResolver, createClientIpResolver, parseTrustedProxies } from './client-ip.js';
export { isValidCorrelationId } from './correlation-id.js';
export type { CostSettlement, SettleOptions } from './cost-settlement.js';
export { CountFilter, type CountOption } from './count-filter.js';
export { closesAfterDenial, DENIAL_DRAIN_LIMIT } from './denial-connection.js';
export {
  type ContinueServer,
  DENIAL_DRAIN_MS,
  type DeferredRequest,
  type DeferredResponse,
  type DrainableRequest,
  deferContinue,
  denialCloses,
} from './denial-drain.js';
export { detached } from './detached-string.js';
export { type ClosableResponse, disconnectSignal } from './disconnect-signal.js';
export { observeFetchResponse } from './fetch-response-feed.js';
export { createHttpLimiter, type HttpLimiter } from './http-limiter.js';
export {
  DEFAULT_EXEMPT_ENDPOINTS,
  type HttpLimiterOptions,
  type IdentifyResult,
} from './http-limiter-options.js';
export type { HttpMetricsSink } from './http-metrics.js';
export { inFlightRequests } from './in-flight-tally.js';
export { type IpRange, inRanges, normalizeIp } from './ip-address.js';
export { boundKey, sha256Base64Url } from './key-hash.js';
export { deriveKey, escapeKeyPart, ipKey, KEY_KINDS, type KeyKind, type KeySpec } from './keys.js';
export { isPromiseLike } from './maybe-promise.js';
export { observeNodeResponse } from './node-response-feed.js';
export {
  type CanonicalPatternOptions,
  canonicalOverridePattern,
  type OverridePatternKind,
  overridePattern,
} from './override-index.js';
export { KEY_PATTERN_KINDS } from './override-pattern-shape.js';
export {
  compileEndpoint,
  compilePathPattern,
  type PathPattern,
  type PathPatternOptions,
  PathSegments,
} from './path-pattern.js';
export { type WarnFunction, WarningCode } from './peer-warnings.js';
export {
  PROBLEM_CONTENT_TYPE,
  problemTypeResolver,
  rateLimitProblem,
  rateLimitProblemBody,
} from './problem.js';
export { formatDecisionHeaders } from './rate-limit-headers.js';
export { canonicalPath, compileTargetCanonicalizer } from './request-target.js';
export {
  ComposedObserver,
  composeObservers,
  type ResponseEnd,
  type ResponseHeadView,
  type ResponseObserver,
} from './response-observer.js';
export type { RuleOptions } from './rules.js';
export type { SettleEvents } from './settle-observer.js';
export type { HeaderPair, HttpRequestInfo, Identity, Verdict } from './types.js';
