export {
  applyHeaders,
  type NodeMiddleware,
  type NodeRateLimitOptions,
  nodeRequestInfo,
  rateLimitMiddleware,
  sendDenial,
  withRateLimit,
} from './node-adapter.js';
