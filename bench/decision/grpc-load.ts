/**
 * gRPC load for the decision benchmark, in its own process: `connections` channels, each keeping `depth` calls
 * of ShouldRateLimit in flight (as Envoy's pooled connections do) over 1,000 client addresses, for `seconds`.
 * Prints `{ rps, p99 }` (p99 in milliseconds).
 *
 *   tsx bench/decision/grpc-load.ts 127.0.0.1:8081 3
 */
import { credentials } from '@grpc/grpc-js';
import { rateLimitPackage } from '../../packages/gateway/src/envoy/grpc-server.js';

const [address, secondsText = '3'] = process.argv.slice(2);
const seconds = Number(secondsText);
const CONNECTIONS = 4;
const DEPTH = 8;
const { RateLimitService } = rateLimitPackage();
const clients = Array.from(
  { length: CONNECTIONS },
  (_, i) =>
    new RateLimitService(address, credentials.createInsecure(), {
      'grpc.use_local_subchannel_pool': 1,
      'sluice.bench': i,
    }),
);
const requests = Array.from({ length: 1000 }, (_, i) => ({
  domain: 'bench',
  descriptors: [{ entries: [{ key: 'remote_address', value: `10.0.${i >> 8}.${i & 255}` }] }],
}));
const latencies: number[] = [];
let done = 0;
let errors = 0;
let stop = false;
let n = 0;

function call(client: (typeof clients)[number]): Promise<void> {
  return new Promise((resolve) => {
    const t0 = performance.now();
    client.ShouldRateLimit(requests[n++ % requests.length], (e: Error | null) => {
      if (e) errors++;
      else {
        done++;
        latencies.push(performance.now() - t0);
      }
      resolve();
    });
  });
}

async function lane(client: (typeof clients)[number]): Promise<void> {
  while (!stop) await call(client);
}

// Connect every channel and warm the server's code paths before measuring.
for (let i = 0; i < 50; i++) await Promise.all(clients.map((c) => call(c)));
done = 0;
latencies.length = 0;
const started = performance.now();
setTimeout(() => {
  stop = true;
}, seconds * 1000);
await Promise.all(clients.flatMap((c) => Array.from({ length: DEPTH }, () => lane(c))));
const elapsed = (performance.now() - started) / 1000;
latencies.sort((a, b) => a - b);
for (const c of clients) c.close();
console.log(
  JSON.stringify({ rps: done / elapsed, p99: latencies[Math.floor(latencies.length * 0.99)] ?? 0, errors }),
);
