export { main } from './cli/main.js';
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
export { hashApiKey } from './identity/api-key-file.js';
export { type Identity, identityKey } from './identity/identity.js';
export type { QuotaCategoryConfig, QuotaConfig } from './quota/quota-config.js';
export { TenantQuota } from './quota/tenant-quota.js';
export {
  type Admission,
  type AdmissionHost,
  type AdmissionRequest,
  admitRequest,
} from './server/admit-request.js';
export { type BucketView, Gateway, type GatewayOptions, type ReloadResult } from './server/gateway.js';
export { type RateLimitServices, startRateLimitServices } from './services/rate-limit-services.js';
