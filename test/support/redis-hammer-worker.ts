/**
 * One of the Node processes of the cross-process accuracy test (packages/sluice/src/redis): connects to Redis,
 * prints `ready`, waits for `go` on stdin, then decides on one key as fast as it can for `durationMs` and prints
 * `{"admitted":n,"decisions":m}`.
 *
 * Arguments: port key durationMs concurrency quota window burst
 */
import { Redis } from 'ioredis';
import { definePolicy } from '../../packages/sluice/src/core/index.js';
import { RedisStore } from '../../packages/sluice/src/redis/index.js';

const [port, key, durationMs, concurrency, quota, window, burst] = process.argv.slice(2);
const policy = definePolicy({
  name: 'rl.accuracy',
  quota: Number(quota),
  window: Number(window),
  burst: Number(burst),
});
const client = new Redis({ host: '127.0.0.1', port: Number(port) });
const store = new RedisStore({ client, timeoutMs: 5_000, failureMode: 'closed' });
await client.ping();
process.stdout.write('ready\n');
await new Promise<void>((resolve) => process.stdin.once('data', () => resolve()));

const end = performance.now() + Number(durationMs);
let admitted = 0;
let decisions = 0;
let failures = 0;
await Promise.all(
  Array.from({ length: Number(concurrency) }, async () => {
    while (performance.now() < end) {
      const d = await store.decide([{ policy, key }], 1);
      decisions++;
      if (d.allowed) admitted++;
      if (d.reason === 'store_unavailable') failures++;
      // As a server would between requests: let sockets and timers run.
      await new Promise((r) => setImmediate(r));
    }
  }),
);
process.stdout.write(`${JSON.stringify({ admitted, decisions, failures, stats: store.stats() })}\n`);
await client.quit();
process.stdin.destroy();
