export { type HonoRateLimitOptions, honoRequestInfo, rateLimit } from './hono-adapter.js';
