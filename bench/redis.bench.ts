/**
 * Redis store benchmark: decisions per second at concurrency 1, 64 and 256 over 10k keys against one local
 * redis-server, for Sluice's RedisStore and, in the same process and run, rate-limiter-flexible's RateLimiterRedis
 * and rate-limit-redis (each on its own ioredis connection); rounds interleaved A B C, then C B A. Server commands
 * per decision come from INFO commandstats around each run, client CPU per decision from process.cpuUsage. The ceiling is redis-benchmark (C client, pipelined)
 * running Sluice's own script, one decision per call and 16 per call in each form, beside bare INCR. Prints Markdown.
 *
 * Run: npx tsx bench/redis.bench.ts [rounds=3] [secondsPerRun=1]
 */
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { Redis } from 'ioredis';
import { RedisStore as RateLimitRedisStore } from 'rate-limit-redis';
import { RateLimiterRedis } from 'rate-limiter-flexible';
import { definePolicy } from '../packages/sluice/src/core/index.js';
import { RedisStore, SCRIPT_SHA } from '../packages/sluice/src/redis/index.js';
import { redisCli, startRedisServer } from '../test/support/redis-server.js';
import { median, rate, ratio, table } from './lib/stats.js';

const run = promisify(execFile);
const rounds = Number(process.argv[2] ?? 3);
const seconds = Number(process.argv[3] ?? 1);
const KEYS = 10_000;
const CONCURRENCY = [1, 64, 256];
// 100k per hour per key over 10k keys: far above the offered load (a few hundred per key per run), so every
// contender admits every request and the decision path is measured; buckets are part drained, as in production.
const QUOTA = 100_000;
const WINDOW_S = 3600;
const policy = definePolicy({ name: 'rl.bench', quota: QUOTA, window: WINDOW_S, burst: QUOTA });

type Decide = (key: string) => Promise<unknown>;
interface Contender {
  readonly name: string;
  readonly decide: Decide;
  readonly close: () => Promise<void>;
  readonly extra?: () => string;
}

const server = await startRedisServer();
const connect = () => new Redis({ host: server.host, port: server.port });

/** Calls per command, plus `usec:<command>` entries with the server's CPU microseconds for it. */
async function commandStats(): Promise<Map<string, number>> {
  const text = await redisCli(server.port, 'INFO', 'commandstats');
  const out = new Map<string, number>();
  for (const m of text.matchAll(/cmdstat_([a-z|_-]+):calls=(\d+),usec=(\d+)/g)) {
    out.set(m[1], Number(m[2]));
    out.set(`usec:${m[1]}`, Number(m[3]));
  }
  return out;
}

/** Server CPU microseconds of the scripts (every contender decides in a script; inner commands are part of it). */
function scriptUsec(m: Map<string, number>): number {
  return (m.get('usec:evalsha') ?? 0) + (m.get('usec:eval') ?? 0);
}

function diff(after: Map<string, number>, before: Map<string, number>): Map<string, number> {
  const out = new Map<string, number>();
  for (const [k, v] of after) {
    if (k === 'info' || k === 'usec:info') continue;
    const d = v - (before.get(k) ?? 0);
    if (d > 0) out.set(k, d);
  }
  return out;
}

const sluiceClient = connect();
const sluice = new RedisStore({
  client: sluiceClient,
  prefix: 'bench:sl:',
  timeoutMs: 1_000,
  failureMode: 'closed',
});
const rlfClient = connect();
const rlf = new RateLimiterRedis({
  storeClient: rlfClient,
  points: QUOTA,
  duration: WINDOW_S,
  keyPrefix: 'bench:rlf',
});
const rlrClient = connect();
const rlr = new RateLimitRedisStore({
  sendCommand: (command: string, ...args: string[]) => rlrClient.call(command, ...args) as never,
  prefix: 'bench:rlr:',
});
rlr.init({ windowMs: WINDOW_S * 1000 } as never);

const contenders: Contender[] = [
  {
    name: 'sluice RedisStore',
    decide: (key) => sluice.decide([{ policy, key }], 1),
    close: async () => {
      await sluiceClient.quit();
    },
  },
  {
    name: 'rate-limiter-flexible RateLimiterRedis',
    decide: (key) => rlf.consume(key),
    close: async () => {
      await rlfClient.quit();
    },
  },
  {
    name: 'rate-limit-redis',
    decide: (key) => rlr.increment(key),
    close: async () => {
      await rlrClient.quit();
    },
  },
];

const keys = Array.from({ length: KEYS }, (_, i) => `user:${i}`);

async function measure(
  c: Contender,
  concurrency: number,
): Promise<{ rate: number; commands: Map<string, number>; n: number; cpuUs: number }> {
  const before = await commandStats();
  const cpu = process.cpuUsage();
  let n = 0;
  let next = (Math.random() * KEYS) | 0;
  const end = performance.now() + seconds * 1000;
  const start = performance.now();
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (performance.now() < end) {
        await c.decide(keys[next]);
        next = next + 7919 < KEYS ? next + 7919 : (next + 7919) % KEYS;
        n++;
      }
    }),
  );
  const elapsed = (performance.now() - start) / 1000;
  const used = process.cpuUsage(cpu);
  return {
    rate: n / elapsed,
    commands: diff(await commandStats(), before),
    n,
    cpuUs: used.user + used.system,
  };
}

// Warm up: JIT, connections, script cache.
for (const c of contenders) await measure(c, 64);

const rates = new Map<string, number[]>();
const perDecision = new Map<string, Map<string, number>>();
const serverUsec = new Map<string, number>();
const clientUsec = new Map<string, number>();
for (const conc of CONCURRENCY) {
  for (let r = 0; r < rounds; r++) {
    const order = r % 2 === 0 ? contenders : [...contenders].reverse();
    for (const c of order) {
      const m = await measure(c, conc);
      const k = `${conc}/${c.name}`;
      rates.set(k, [...(rates.get(k) ?? []), m.rate]);
      if (conc === 256 && r === 0) {
        perDecision.set(c.name, new Map([...m.commands].map(([cmd, v]) => [cmd, v / m.n])));
        serverUsec.set(c.name, scriptUsec(m.commands) / m.n);
        clientUsec.set(c.name, m.cpuUs / m.n);
      }
      process.stderr.write(`  c=${String(conc).padEnd(4)} ${c.name.padEnd(40)} ${rate(m.rate)}/s\n`);
    }
  }
}

const sluiceStats = sluice.stats();
if (sluiceStats.fallbackDecisions > 0)
  throw new Error('a Sluice decision fell back: the figures would not be Redis');

// The deny cache: one exhausted key, decided again and again.
const tight = definePolicy({ name: 'rl.tight', quota: 1, window: 3600, burst: 1 });
const denyClient = connect();
const deny = new RedisStore({ client: denyClient, prefix: 'bench:deny:', timeoutMs: 1_000 });
await deny.decide([{ policy: tight, key: 'k' }], 1);
await deny.decide([{ policy: tight, key: 'k' }], 1); // denied by Redis: now held by the deny cache
const callsBefore = deny.stats().scriptCalls;
const denyN = 100_000;
const denyStart = performance.now();
for (let i = 0; i < denyN; i++) await deny.decide([{ policy: tight, key: 'k' }], 1);
const denyRate = denyN / ((performance.now() - denyStart) / 1000);
const denyCalls = deny.stats().scriptCalls - callsBefore;
await denyClient.quit();

// The ceiling: redis-benchmark (pipelined C client) running Sluice's own script.
// quota, unitsPerToken, burst, shadow, queue limit, queue maxWaitMs, step ms (see lua-script.ts).
const policyArgs = [
  String(policy.quota),
  String(policy.unitsPerToken),
  String(policy.burst),
  '0',
  '0',
  '0',
  '0',
];
// One policy (index 1); a run of entries: decide, cost 1, server time, one check of policy 1, then its length.
const run1 = ['d', '1', '', '1', '1'];
async function redisBenchmark(args: string[]): Promise<{ rate: number; usec: number }> {
  await redisCli(server.port, 'CONFIG', 'RESETSTAT');
  const { stdout } = await run(
    'redis-benchmark',
    [
      '-h',
      server.host,
      '-p',
      String(server.port),
      '-n',
      '200000',
      '-c',
      '50',
      '-P',
      '32',
      '-r',
      String(KEYS),
      '-q',
      ...args,
    ],
    { timeout: 120_000, maxBuffer: 1 << 20 },
  );
  const m = /([\d.]+) requests per second/.exec(stdout.replaceAll('\r', '\n').trim().split('\n').pop() ?? '');
  if (!m) throw new Error(`unexpected redis-benchmark output: ${stdout}`);
  const stats = await redisCli(server.port, 'INFO', 'commandstats');
  const usec = /cmdstat_(?:incr|evalsha):calls=\d+,usec=\d+,usec_per_call=([\d.]+)/.exec(stats);
  // A script error is answered fast: make sure the ceiling measured decisions, not errors.
  if (!/failed_calls=0/.test(/cmdstat_(?:incr|evalsha):.*/.exec(stats)?.[0] ?? '')) {
    throw new Error(`redis-benchmark calls failed: ${stats}`);
  }
  return { rate: Number(m[1]), usec: Number(usec?.[1] ?? Number.NaN) };
}
const incr = await redisBenchmark(['-t', 'incr']);
// The form the store sends for one decide of one continuous policy on the server's clock (the script's short
// path, D-R10 to D-R12): quota, capacity and units to take.
const short = await redisBenchmark([
  'EVALSHA',
  SCRIPT_SHA,
  '1',
  'bench:rs:{__rand_int__}',
  String(policy.quota),
  String(policy.burst * policy.unitsPerToken),
  String(policy.unitsPerToken),
]);
// The same decide in the general form, as a batch of one.
const single = await redisBenchmark([
  'EVALSHA',
  SCRIPT_SHA,
  '1',
  'bench:rb:{__rand_int__}',
  '0',
  '1',
  ...policyArgs,
  ...run1,
  '1',
]);
const BATCH = 16;
// Concurrent decides of distinct keys under one policy, as the store batches them: the short form with 16 keys.
const shortBatched = await redisBenchmark([
  'EVALSHA',
  SCRIPT_SHA,
  String(BATCH),
  ...Array.from({ length: BATCH }, (_, i) => `bench:rsb${i}:{__rand_int__}`),
  String(policy.quota),
  String(policy.burst * policy.unitsPerToken),
  String(policy.unitsPerToken),
]);
const batched = await redisBenchmark([
  'EVALSHA',
  SCRIPT_SHA,
  String(BATCH),
  ...Array.from({ length: BATCH }, (_, i) => `bench:rb${i}:{__rand_int__}`),
  '0',
  '1',
  ...policyArgs,
  ...run1,
  String(BATCH),
]);

for (const c of contenders) await c.close();
await server.stop();

const med = (k: string) => median(rates.get(k) ?? [Number.NaN]);
const base = 'rate-limiter-flexible RateLimiterRedis';
console.log(
  `### Redis store: decisions per second, 10k keys (median of ${rounds} interleaved runs of ${seconds} s)\n`,
);
console.log(
  table(
    ['contender', ...CONCURRENCY.map((c) => `c=${c}`), ...CONCURRENCY.map((c) => `vs RLF c=${c}`)],
    contenders.map((c) => [
      c.name,
      ...CONCURRENCY.map((k) => rate(med(`${k}/${c.name}`))),
      ...CONCURRENCY.map((k) => ratio(med(`${k}/${c.name}`), med(`${k}/${base}`))),
    ]),
  ),
);
// Each round runs every contender back to back, so a round's ratio compares them under the same load.
const roundRatios = (name: string, conc: number) => {
  const mine = rates.get(`${conc}/${name}`) ?? [];
  const theirs = rates.get(`${conc}/${base}`) ?? [];
  return mine.map((v, i) => v / theirs[i]).sort((a, b) => a - b);
};
console.log('\n### Ratio to rate-limiter-flexible per round: median (lowest to highest)\n');
console.log(
  table(
    ['contender', ...CONCURRENCY.map((c) => `c=${c}`)],
    contenders
      .filter((c) => c.name !== base)
      .map((c) => [
        c.name,
        ...CONCURRENCY.map((k) => {
          const r = roundRatios(c.name, k);
          return `${median(r).toFixed(2)}x (${r[0].toFixed(2)} to ${r[r.length - 1].toFixed(2)})`;
        }),
      ]),
  ),
);
console.log(
  '\n### Redis commands, server and client CPU per decision (INFO commandstats, process.cpuUsage; c=256, first run)\n',
);
console.log(
  table(
    [
      'contender',
      'commands per decision',
      'script CPU us per decision',
      'client CPU us per decision',
      'by command',
    ],
    contenders.map((c) => {
      const m = perDecision.get(c.name) ?? new Map();
      const calls = [...m].filter(([k]) => !k.startsWith('usec:'));
      const total = calls.reduce((a, [, v]) => a + v, 0);
      return [
        c.name,
        total.toFixed(3),
        (serverUsec.get(c.name) ?? Number.NaN).toFixed(2),
        (clientUsec.get(c.name) ?? Number.NaN).toFixed(2),
        calls
          .sort((x, y) => y[1] - x[1])
          .map(([k, v]) => `${k} ${v.toFixed(3)}`)
          .join(', '),
      ];
    }),
  ),
);
console.log(
  `\nSluice at concurrency 256: ${(sluiceStats.scriptCalls / sluiceStats.redisDecisions).toFixed(3)} script calls ` +
    `(round trips) per decision over the whole run; ${sluiceStats.batchedScriptCalls} of ${sluiceStats.scriptCalls} ` +
    'calls carried more than one decision.',
);
console.log(
  `\nDeny cache: ${denyN.toLocaleString('en')} denials of one exhausted key, after Redis denied it once, made ${denyCalls} script calls ` +
    `(${rate(denyRate)} decisions/s, answered in process).`,
);
console.log('\n### Ceiling: redis-benchmark, 50 connections, pipeline 32, 10k keys\n');
console.log(
  table(
    ['command', 'calls/s', 'decisions/s', 'server CPU us per call', 'per decision'],
    [
      ['INCR (no limiter logic)', rate(incr.rate), '-', incr.usec.toFixed(2), '-'],
      [
        'Sluice script, 1 decision per call (short form)',
        rate(short.rate),
        rate(short.rate),
        short.usec.toFixed(2),
        short.usec.toFixed(2),
      ],
      [
        'Sluice script, 1 decision per call (general form)',
        rate(single.rate),
        rate(single.rate),
        single.usec.toFixed(2),
        single.usec.toFixed(2),
      ],
      [
        `Sluice script, ${BATCH} decisions per call (short form)`,
        rate(shortBatched.rate),
        rate(shortBatched.rate * BATCH),
        shortBatched.usec.toFixed(2),
        (shortBatched.usec / BATCH).toFixed(2),
      ],
      [
        `Sluice script, ${BATCH} decisions per call (general form)`,
        rate(batched.rate),
        rate(batched.rate * BATCH),
        batched.usec.toFixed(2),
        (batched.usec / BATCH).toFixed(2),
      ],
    ],
  ),
);
