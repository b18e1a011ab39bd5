export {
  type EnvoyConfig,
  type EnvoyDescriptorNode,
  type EnvoyDomain,
  type EnvoyRateLimit,
  type EnvoyUnit,
  resolveEnvoyConfig,
  UNIT_SECONDS,
} from '../config/envoy-config.js';
export { EnvoyPlan } from './envoy-plan.js';
export { EnvoyRateLimitServer, type EnvoyServerOptions, PROTO_DIR, rateLimitPackage } from './grpc-server.js';
export { RateLimitService } from './rate-limit-service.js';
export {
  type RateLimitRequestMessage,
  type RateLimitResponseMessage,
  RateLimitServiceError,
} from './rls-messages.js';
