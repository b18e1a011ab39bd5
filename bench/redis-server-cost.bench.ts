/**
 * Redis server cost per decision, counted in instructions: each contender decides against its own
 * `redis-server` running under `valgrind --tool=callgrind`, which counts the instructions the server executes
 * (its own code, Lua and libc) rather than timing them. The count is the same from one run to the next whatever
 * else the machine is doing, so it compares script changes and libraries on a noisy machine where a 5% change in
 * server time hides in the spread of decisions per second. Counting starts after a warm-up (script loaded, keys
 * created) and covers N decisions; the server's background work during them (its cron runs once a second here)
 * is counted too and is a few hundred instructions per decision at most.
 *
 * Contenders: Sluice's RedisStore (one decision per call at concurrency 1; batched calls at 64),
 * rate-limiter-flexible's RateLimiterRedis and rate-limit-redis, each through its own ioredis connection, the same
 * policy as bench/redis.bench.ts. Prints Markdown.
 *
 * Run: npx tsx bench/redis-server-cost.bench.ts [decisions=2000]
 * Needs valgrind (Debian package `valgrind`).
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { RedisStore as RateLimitRedisStore } from 'rate-limit-redis';
import { RateLimiterRedis } from 'rate-limiter-flexible';
import { definePolicy } from '../packages/sluice/src/core/index.js';
import { RedisStore } from '../packages/sluice/src/redis/index.js';
import { startRedisServer } from '../test/support/redis-server.js';
import { table } from './lib/stats.js';

const N = Number(process.argv[2] ?? 2000);
const KEYS = 1_000;
const QUOTA = 100_000;
const WINDOW_S = 3600;
const policy = definePolicy({ name: 'rl.bench', quota: QUOTA, window: WINDOW_S, burst: QUOTA });
const keys = Array.from({ length: KEYS }, (_, i) => `user:${i}`);

try {
  execFileSync('valgrind', ['--version'], { stdio: 'ignore' });
} catch {
  console.error('This benchmark needs valgrind: apt-get install valgrind');
  process.exit(1);
}

interface Contender {
  readonly name: string;
  readonly concurrency: number;
  readonly make: (client: Redis) => (key: string) => Promise<unknown>;
}

const contenders: Contender[] = [];
for (const concurrency of [1, 64]) {
  contenders.push(
    {
      name: 'sluice RedisStore',
      concurrency,
      make: (client) => {
        const store = new RedisStore({ client, prefix: 'c:sl:', timeoutMs: 60_000, failureMode: 'closed' });
        return (key) => store.decide([{ policy, key }], 1);
      },
    },
    {
      name: 'rate-limiter-flexible RateLimiterRedis',
      concurrency,
      make: (client) => {
        const rlf = new RateLimiterRedis({
          storeClient: client,
          points: QUOTA,
          duration: WINDOW_S,
          keyPrefix: 'c:rlf',
        });
        return (key) => rlf.consume(key);
      },
    },
    {
      name: 'rate-limit-redis',
      concurrency,
      make: (client) => {
        const rlr = new RateLimitRedisStore({
          sendCommand: (command: string, ...args: string[]) => client.call(command, ...args) as never,
          prefix: 'c:rlr:',
        });
        rlr.init({ windowMs: WINDOW_S * 1000 } as never);
        return (key) => rlr.increment(key);
      },
    },
  );
}

/** Total instructions in a callgrind dump (its `summary:` or `totals:` line). */
function instructions(file: string): number {
  const m = /^(?:summary|totals): (\d+)/m.exec(readFileSync(file, 'utf8'));
  if (!m) throw new Error(`no instruction total in ${file}`);
  return Number(m[1]);
}

async function run(decide: (key: string) => Promise<unknown>, n: number, concurrency: number, from: number) {
  let next = from;
  let left = n;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (left > 0) {
        left--;
        const key = keys[next];
        next = (next + 7) % KEYS;
        await decide(key);
      }
    }),
  );
}

async function measure(c: Contender): Promise<number> {
  const dir = mkdtempSync(join(tmpdir(), 'sluice-cg-'));
  const server = await startRedisServer({
    dir,
    wrapper: ['valgrind', '--tool=callgrind', `--callgrind-out-file=${join(dir, 'cg.out')}`],
    args: ['--hz', '1'],
  });
  try {
    const client = new Redis({ host: server.host, port: server.port });
    const decide = c.make(client);
    // Warm up: the script loaded, every key written once.
    await run(decide, KEYS, c.concurrency, 0);
    const dumps = () => readdirSync(dir).filter((f) => f.startsWith('cg.out'));
    execFileSync('callgrind_control', ['--zero', String(server.pid)], { stdio: 'ignore' });
    await run(decide, N, c.concurrency, 3);
    const before = new Set(dumps());
    execFileSync('callgrind_control', ['--dump', String(server.pid)], { stdio: 'ignore' });
    const dump = dumps().find((f) => !before.has(f));
    if (dump === undefined) throw new Error('callgrind wrote no dump');
    const total = instructions(join(dir, dump));
    await client.quit();
    return total / N;
  } finally {
    await server.stop();
  }
}

const rows: string[][] = [];
const byKey = new Map<string, number>();
for (const c of contenders) {
  const perDecision = await measure(c);
  byKey.set(`${c.concurrency}/${c.name}`, perDecision);
  process.stderr.write(
    `  c=${String(c.concurrency).padEnd(3)} ${c.name.padEnd(40)} ${perDecision.toFixed(0)}\n`,
  );
}
for (const c of contenders) {
  const v = byKey.get(`${c.concurrency}/${c.name}`) ?? Number.NaN;
  const rlf = byKey.get(`${c.concurrency}/rate-limiter-flexible RateLimiterRedis`) ?? Number.NaN;
  rows.push([
    c.name,
    String(c.concurrency),
    Math.round(v).toLocaleString('en-US'),
    `${(v / rlf).toFixed(2)}x`,
  ]);
}
console.log(`### Redis server instructions per decision (callgrind, ${N} decisions over ${KEYS} keys)\n`);
console.log(table(['contender', 'concurrency', 'server instructions per decision', 'vs RLF'], rows));
process.exit(0);
