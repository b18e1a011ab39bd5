export {
  type Admission,
  type AdmissionHost,
  type AdmissionRequest,
  admitRequest,
} from './admission/admit-request.js';
export { main } from './cli/main.js';
export {
  type ConfigWarning,
  configWarnings,
  formatWarnings,
  WarningCode,
} from './config/config-warnings.js';
export { durationMs, sizeBytes } from './config/duration.js';
export {
  type ClassConfig,
  DEFAULT_PUBLIC_AUTH,
  type EndpointRule,
  type GatewayConfig,
  type TierConfig,
} from './config/gateway-config.js';
export {
  type ConfigOverrides,
  type LoadConfigOptions,
  type LoadResult,
  loadConfigFile,
  loadConfigOrThrow,
  loadConfigText,
} from './config/load-config.js';
export type { QuotaCategoryConfig, QuotaConfig } from './config/quota-config.js';
export { REDACTED, redactConfig, redactUrls } from './config/redact.js';
export { configSchema, SCHEMA_URL } from './config/schema.js';
export { formatViolations, type Violation } from './config/violation.js';
export {
  type DecisionAnswer,
  type DecisionConfig,
  type DecisionHost,
  DecisionServer,
  decideRequest,
} from './decision/index.js';
export { startEchoUpstream } from './demo/echo-upstream.js';
export { EXAMPLE_CONFIG, runDemo } from './demo/run-demo.js';
export {
  type EnvoyConfig,
  EnvoyRateLimitServer,
  RateLimitService,
  RateLimitServiceError,
  rateLimitPackage,
} from './envoy/index.js';
export { type BucketView, Gateway, type GatewayOptions, type ReloadResult } from './gateway/gateway.js';
export { hashApiKey } from './identity/api-key-file.js';
export { type Identity, identityKey } from './identity/identity.js';
export { TenantQuota } from './quota/tenant-quota.js';
