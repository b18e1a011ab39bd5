export {
  type FastifyRouteRateLimit,
  fastifyRequestInfo,
  type SluiceFastifyOptions,
  sluiceFastify,
} from './fastify-adapter.js';
