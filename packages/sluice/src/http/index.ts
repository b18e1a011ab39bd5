export {
  type ClientIpOptions,
  type ClientIpResolver,
  createClientIpResolver,
  type ProxyHeader,
  parseTrustedProxies,
} from './client-ip.js';
export {
  correlationIdOf,
  isValidCorrelationId,
  MAX_CORRELATION_ID_LENGTH,
  newCorrelationId,
} from './correlation-id.js';
export { forwardedForHops, forwardedHops, stripPort } from './forwarded.js';
export { type HeaderMode, headerModeOption } from './header-mode.js';
export { readHeader } from './header-source.js';
export {
  createHttpLimiter,
  DEFAULT_EXEMPT_ENDPOINTS,
  type ExemptOptions,
  type HttpLimiter,
  type HttpLimiterOptions,
  type PublicAuthOptions,
} from './http-limiter.js';
export { type IpRange, inRanges, ipKeyOf, NAMED_RANGES, normalizeIp, parseIpRange } from './ip-address.js';
export { boundKey, partitionKeyOf, sha256Base64Url } from './key-hash.js';
export {
  compileKey,
  deriveKey,
  escapeKeyPart,
  ipKey,
  KEY_KINDS,
  type KeyDeriver,
  type KeyFunction,
  type KeyKind,
  type KeySpec,
} from './keys.js';
export { isPromiseLike, whenReady } from './maybe-promise.js';
export {
  compileEndpoint,
  compilePathPattern,
  type EndpointPattern,
  endpoint,
  type PathPattern,
  parseMethods,
} from './path-pattern.js';
export {
  PROBLEM_CONTENT_TYPE,
  ProblemCode,
  type ProblemInput,
  problemTypeResolver,
  type RateLimitProblem,
  rateLimitProblem,
  rateLimitProblemBody,
  windowPhrase,
} from './problem.js';
export {
  type DraftHeaderOptions,
  type FormatHeadersOptions,
  formatDecisionHeaders,
  formatRateLimit,
  formatRateLimitPolicy,
  HeaderName,
  HeaderPlan,
  legacyPolicyName,
  legacyRateLimitHeaders,
  mostRestrictive,
  resetEpochSeconds,
  SF_INTEGER_MAX,
  sfInteger,
} from './rate-limit-headers.js';
export { type CompiledRule, compileRule, type RuleOptions } from './rules.js';
export type {
  HeaderPair,
  HeaderSource,
  HttpRequestInfo,
  Identity,
  MaybeVerdict,
  Verdict,
  VerdictAction,
} from './types.js';
