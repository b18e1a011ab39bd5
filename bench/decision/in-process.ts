/**
 * Sluice's own cost per decision, without any transport, in a fresh process: the decision API's `decideRequest`
 * or the Envoy service's `shouldRateLimit`, called in a loop over 1,000 client addresses on the memory store with
 * the benchmark's limits (every decision admits). Prints `{ rps, p99, errors }` like the load generators
 * (p99 is not measured here: 0).
 *
 *   tsx bench/decision/in-process.ts http 3
 *   tsx bench/decision/in-process.ts grpc 3
 */
import { decideRequest } from '../../packages/gateway/src/decision/decide-request.js';
import { RateLimitService } from '../../packages/gateway/src/envoy/rate-limit-service.js';
import { startBenchGateway } from './bench-gateway.js';

const [kind = 'http', secondsText = '3'] = process.argv.slice(2);
const gateway = await startBenchGateway();
const service = new RateLimitService(gateway);
const ips = Array.from({ length: 1000 }, (_, i) => `10.0.${i >> 8}.${i & 255}`);
const requests = ips.map((ip) => ({
  domain: 'bench',
  descriptors: [{ entries: [{ key: 'remote_address', value: ip }] }],
}));
const facts = ips.map((clientIp) => ({
  method: 'GET',
  path: '/api/items',
  headers: {},
  clientIp,
  trustIdentityHeaders: false,
  cost: 1,
  correlationId: 'bench',
  nowMs: Date.now(),
}));
const once = (i: number) =>
  kind === 'grpc' ? service.shouldRateLimit(requests[i % 1000]) : decideRequest(gateway, facts[i % 1000]);
for (let i = 0; i < 20_000; i++) await once(i);
let n = 0;
const end = performance.now() + Number(secondsText) * 1000;
const started = performance.now();
while (performance.now() < end) {
  for (let k = 0; k < 1000; k++) await once(n++);
}
const rps = n / ((performance.now() - started) / 1000);
await gateway.close();
console.log(JSON.stringify({ rps, p99: 0, errors: 0 }));
