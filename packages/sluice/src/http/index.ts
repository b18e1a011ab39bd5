export {
  type AdapterOptionKind,
  adapterOptions,
  httpLimiterOption,
} from './adapter-options.js';
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
export { closesAfterDenial, DENIAL_DRAIN_LIMIT } from './denial-connection.js';
export { forwardedForHops, forwardedHops, stripPort } from './forwarded.js';
export { type HeaderMode, headerModeOption } from './header-mode.js';
export { readHeader } from './header-source.js';
export { createHttpLimiter, type HttpLimiter } from './http-limiter.js';
export {
  type CredentialFailure,
  DEFAULT_EXEMPT_ENDPOINTS,
  type ExemptOptions,
  type HttpLimiterOptions,
  type IdentifyResult,
  type PublicAuthOptions,
} from './http-limiter-options.js';
export { type HttpProblem, httpProblemBody } from './http-problem.js';
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
  emitWarning,
  PeerWarnings,
  peerWarningsOf,
  type WarnFunction,
  WarningCode,
} from './peer-warnings.js';
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
export {
  type AcceptedTarget,
  type CanonicalTarget,
  canonicalPath,
  compileTargetCanonicalizer,
  type EncodedSlashes,
  type PathParameters,
  type ResolvedTargetOptions,
  TARGET_REFUSALS,
  type TargetCanonicalizer,
  type TargetOptions,
  type TargetRefusal,
  type TargetRefusalCode,
} from './request-target.js';
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
