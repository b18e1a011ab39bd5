export { type ExpressRateLimitOptions, expressRequestInfo, rateLimit } from './express-adapter.js';
