/**
 * The ceiling of the gRPC rows of the decision benchmark, in its own process: a @grpc/grpc-js server with the same
 * RateLimitService definition answering every call with one constant response (no decision at all). Measured by
 * the same load generator, it shows what the transport alone costs. Prints `ready <address>`.
 *
 *   tsx bench/decision/grpc-ceiling.ts
 */
import { Server, ServerCredentials } from '@grpc/grpc-js';
import { rateLimitPackage } from '../../packages/gateway/src/envoy/grpc-server.js';

const answer = {
  overall_code: 'OK',
  statuses: [
    {
      code: 'OK',
      current_limit: { name: 'bench.remote_address', requests_per_unit: 10_000_000, unit: 'SECOND' },
      limit_remaining: 99_999_999,
      duration_until_reset: { seconds: 1, nanos: 0 },
    },
  ],
  response_headers_to_add: [
    { key: 'RateLimit-Policy', value: '"bench.remote_address";q=10000000;w=1' },
    { key: 'RateLimit', value: '"bench.remote_address";r=99999999;t=1' },
  ],
  request_headers_to_add: [],
  raw_body: Buffer.alloc(0),
};
const server = new Server();
server.addService(rateLimitPackage().RateLimitService.service, {
  ShouldRateLimit: (_call: unknown, callback: (e: null, r: typeof answer) => void) => callback(null, answer),
});
const port = await new Promise<number>((resolve, reject) => {
  server.bindAsync('127.0.0.1:0', ServerCredentials.createInsecure(), (e, p) => (e ? reject(e) : resolve(p)));
});
console.log(`ready 127.0.0.1:${port}`);
process.on('SIGTERM', () => {
  server.forceShutdown();
  process.exit(0);
});
