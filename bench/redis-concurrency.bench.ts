/**
 * What a concurrency policy costs a Redis decision, in one process and one run against one local redis-server:
 * requests at concurrency 64 over 10k keys, each a `decide` of
 *
 * - `rate`: one rate policy (the script's short form);
 * - `rate+rate`: two rate policies (the general form, the path a concurrency policy takes);
 * - `rate+slots`: a rate policy and a concurrency policy, then the release of its slot (`refund`, riding the next
 *   batch) once the decision is back, as the adapters do when the response ends; leases renewed by the store's
 *   timer meanwhile.
 *
 * Rounds interleaved A B C, then C B A; per round the ratio to `rate+rate`, medians printed, with the server's
 * script CPU per request from INFO commandstats. Prints Markdown.
 *
 * Run: npx tsx bench/redis-concurrency.bench.ts [rounds=5] [secondsPerRun=1]
 */
import { Redis } from 'ioredis';
import { type Check, definePolicy } from '../packages/sluice/src/core/index.js';
import { RedisStore } from '../packages/sluice/src/redis/index.js';
import { redisCli, startRedisServer } from '../test/support/redis-server.js';
import { median, rate, table } from './lib/stats.js';

const rounds = Number(process.argv[2] ?? 5);
const seconds = Number(process.argv[3] ?? 1);
const KEYS = 10_000;
const WORKERS = 64;
const perHour = definePolicy({ name: 'rl.bench', quota: 100_000, window: 3600, burst: 100_000 });
const perDay = definePolicy({ name: 'rl.day', quota: 1_000_000, window: 86_400, burst: 1_000_000 });
const slots = definePolicy({ name: 'rl.slots', concurrent: 1000 });

const server = await startRedisServer();
const redis = new Redis({ host: server.host, port: server.port });
const store = new RedisStore({ client: redis, timeoutMs: 10_000 });

/** Checks built once per key, as a limiter holds them: no allocation of the benchmark's own per request. */
const build = (ps: readonly (typeof perHour)[]) =>
  Array.from({ length: KEYS }, (_, i) => ps.map((policy): Check => ({ policy, key: `k${i}` })));
const one = build([perHour]);
const two = build([perHour, perDay]);
const withSlots = build([perHour, slots]);
const slotOnly = build([slots]);

type Request = (i: number) => Promise<unknown>;
const contenders: { name: string; request: Request }[] = [
  { name: 'rate', request: (i) => store.decide(one[i], 1) },
  { name: 'rate+rate', request: (i) => store.decide(two[i], 1) },
  {
    name: 'rate+slots',
    request: async (i) => {
      const d = await store.decide(withSlots[i], 1);
      if (d.allowed) void store.refund(slotOnly[i], 1);
    },
  },
];

async function scriptUsec(): Promise<{ calls: number; usec: number }> {
  const text = await redisCli(server.port, 'INFO', 'commandstats');
  const m = /cmdstat_evalsha:calls=(\d+),usec=(\d+)/.exec(text);
  return m ? { calls: Number(m[1]), usec: Number(m[2]) } : { calls: 0, usec: 0 };
}

/** Requests per second at WORKERS in flight for `seconds`, and the script's server microseconds per request. */
async function measure(request: Request): Promise<{ perSecond: number; usecPerRequest: number }> {
  const before = await scriptUsec();
  let done = 0;
  let next = 0;
  const end = performance.now() + seconds * 1000;
  await Promise.all(
    Array.from({ length: WORKERS }, async () => {
      while (performance.now() < end) {
        await request(next++ % KEYS);
        done++;
      }
    }),
  );
  const elapsed = seconds * 1000 + (performance.now() - end);
  const after = await scriptUsec();
  return { perSecond: (done * 1000) / elapsed, usecPerRequest: (after.usec - before.usec) / done };
}

// Warm-up: the script loaded, the keys' buckets written.
for (const c of contenders) await measure(c.request);
const results = new Map<string, { perSecond: number[]; usec: number[]; vsGeneral: number[] }>();
for (const c of contenders) results.set(c.name, { perSecond: [], usec: [], vsGeneral: [] });
for (let r = 0; r < rounds; r++) {
  const order = r % 2 === 0 ? contenders : [...contenders].reverse();
  const round = new Map<string, number>();
  for (const c of order) {
    const m = await measure(c.request);
    const into = results.get(c.name);
    into?.perSecond.push(m.perSecond);
    into?.usec.push(m.usecPerRequest);
    round.set(c.name, m.perSecond);
  }
  for (const c of contenders) {
    results.get(c.name)?.vsGeneral.push((round.get(c.name) ?? 0) / (round.get('rate+rate') ?? 1));
  }
}
const rows = contenders.map((c) => {
  const x = results.get(c.name) as { perSecond: number[]; usec: number[]; vsGeneral: number[] };
  const sorted = [...x.vsGeneral].sort((a, b) => a - b);
  return [
    c.name,
    rate(median(x.perSecond)),
    `${median(x.vsGeneral).toFixed(2)} (${sorted[0].toFixed(2)} to ${sorted[sorted.length - 1].toFixed(2)})`,
    median(x.usec).toFixed(1),
  ];
});
console.log(
  `Redis decide with and without a concurrency policy: ${WORKERS} in flight, ${KEYS} keys, ${rounds} rounds of ${seconds} s\n`,
);
console.log(
  table(['request', 'requests/s (median)', 'vs rate+rate (median, range)', 'script µs per request'], rows),
);
store.close();
await redis.quit();
await server.stop();
