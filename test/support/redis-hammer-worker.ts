/**
 * One of the Node processes of the cross-process accuracy tests (packages/sluice/src/redis): connects to Redis,
 * prints `ready`, waits for `go` on stdin, then decides on its keys as fast as it can for `durationMs` and prints
 * `{"admitted":n,"decisions":m,...}`.
 *
 * Arguments: port key durationMs concurrency quota window burst [options]
 *
 * - `port`: one port (a single redis-server), or several separated by commas (the seeds of a Redis Cluster,
 *   reached through an ioredis `Cluster` with the recommended settings of src/redis/README.md).
 * - `key`: one key, or several separated by commas; the concurrent callers take them in turn.
 * - `options` (JSON, optional): `timeoutMs` (default 5000), `probeIntervalMs` (default 250), and `announceHalf`
 *   (print `half` once half of `durationMs` has passed, so the test can act in the middle of the run without a
 *   timer of its own).
 *
 * The result also holds, per key, the refused calls (`store_unavailable`), those of them that waited the whole
 * `timeoutMs` (they may still have run on the server), and the wall time (`Date.now()`, the host's clock, which is
 * also the local Redis servers' clock) of the first refused call's start and of the last refused call's end;
 * `startedAt` and `endedAt`, the wall time of the run's start and of its last call's end; and `endServerMs`, the
 * server's `TIME` read once the last call has ended.
 */
import { Cluster, Redis } from 'ioredis';
import { definePolicy } from '../../packages/sluice/src/core/index.js';
import { RedisStore, reconnectBackoff } from '../../packages/sluice/src/redis/index.js';

const [port, keyList, durationMs, concurrency, quota, window, burst, extra] = process.argv.slice(2);
const options: { timeoutMs?: number; probeIntervalMs?: number; announceHalf?: boolean } = JSON.parse(
  extra ?? '{}',
);
const timeoutMs = options.timeoutMs ?? 5_000;
const policy = definePolicy({
  name: 'rl.accuracy',
  quota: Number(quota),
  window: Number(window),
  burst: Number(burst),
});
const ports = port.split(',').map(Number);
const keys = keyList.split(',');
const client =
  ports.length > 1
    ? new Cluster(
        ports.map((p) => ({ host: '127.0.0.1', port: p })),
        {
          enableOfflineQueue: false,
          clusterRetryStrategy: reconnectBackoff(),
          redisOptions: { autoResendUnfulfilledCommands: false, connectTimeout: 1_000 },
        },
      )
    : new Redis({ host: '127.0.0.1', port: ports[0] });
client.on('error', () => {});
if (client instanceof Cluster) await new Promise((resolve) => client.once('ready', resolve));
const store = new RedisStore({
  client,
  timeoutMs,
  failureMode: 'closed',
  breaker: { probeIntervalMs: options.probeIntervalMs ?? 250 },
});
await client.ping();
process.stdout.write('ready\n');
await new Promise<void>((resolve) => process.stdin.once('data', () => resolve()));

interface KeyTally {
  admitted: number;
  decisions: number;
  refused: number;
  timedOut: number;
  firstRefusedAt?: number;
  lastRefusedAt?: number;
}
const tallies = new Map<string, KeyTally>(
  keys.map((k) => [k, { admitted: 0, decisions: 0, refused: 0, timedOut: 0 }]),
);
const startedAt = Date.now();
const start = performance.now();
const end = start + Number(durationMs);
let halfAnnounced = !options.announceHalf;
await Promise.all(
  Array.from({ length: Number(concurrency) }, async (_, w) => {
    for (let i = w; performance.now() < end; i++) {
      const key = keys[i % keys.length];
      const tally = tallies.get(key)!;
      const callStart = Date.now();
      const d = await store.decide([{ policy, key }], 1);
      const callEnd = Date.now();
      tally.decisions++;
      if (d.allowed) tally.admitted++;
      if (d.reason === 'store_unavailable') {
        tally.refused++;
        if (callEnd - callStart >= timeoutMs - 1) tally.timedOut++;
        tally.firstRefusedAt = Math.min(tally.firstRefusedAt ?? callStart, callStart);
        tally.lastRefusedAt = Math.max(tally.lastRefusedAt ?? callEnd, callEnd);
      }
      if (!halfAnnounced && performance.now() >= start + Number(durationMs) / 2) {
        halfAnnounced = true;
        process.stdout.write('half\n');
      }
      // As a server would between requests: let sockets and timers run.
      await new Promise((r) => setImmediate(r));
    }
  }),
);
const endedAt = Date.now();
const [seconds, micros] = await client.time();
const endServerMs = Number(seconds) * 1000 + Math.ceil(Number(micros) / 1000);
const all = [...tallies.values()];
const sum = (f: (t: KeyTally) => number) => all.reduce((s, t) => s + f(t), 0);
process.stdout.write(
  `${JSON.stringify({
    admitted: sum((t) => t.admitted),
    decisions: sum((t) => t.decisions),
    failures: sum((t) => t.refused),
    keys: Object.fromEntries(tallies),
    startedAt,
    endedAt,
    endServerMs,
    stats: store.stats(),
  })}\n`,
);
await client.quit();
process.stdin.destroy();
