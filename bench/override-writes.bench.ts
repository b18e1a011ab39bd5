/**
 * Override writes against the number of rules: a store holding 0, 10,000 or 100,000 rules takes 2,000 more
 * writes (penalty-style blocks of new keys, each with an end), each followed by one decision of the HTTP limiter,
 * as a gateway under traffic makes one after every write (the decision brings its override index up to date),
 * for at most 5 s. Two ways to bring the index up to date are timed in the same process, interleaved per round:
 * rebuilt from the whole list (every write before D-G82) and updated from the store's log of changes (D-G82). Memory store,
 * the threads' shared store (`shared`, its journal of D-G110) and that store before its journal (`shared-json`, one
 * JSON document written whole per write, bench/lib/json-shared-overrides.ts); with a Redis URL as the second
 * argument (REDIS_URL), the Redis store too. The figure is writes per second, the median
 * over rounds, with the spread, and the process's resident set size after the largest run.
 *
 * Run: npx tsx bench/override-writes.bench.ts [rounds=5] [redis-url]
 * (OVERRIDE_BENCH_SIZES=0,5000,100000 and OVERRIDE_BENCH_STORES=shared,shared-json choose sizes and stores)
 */
import {
  Limiter,
  type OverrideChange,
  type OverrideRule,
  type OverrideStore,
  parseOverride,
} from '../packages/sluice/src/core/index.js';
import { createHttpLimiter, type HttpRequestInfo } from '../packages/sluice/src/http/index.js';
import { MemoryOverrides, MemoryStore } from '../packages/sluice/src/memory/index.js';
import { SharedOverrides } from '../packages/sluice/src/shared/index.js';
import { JsonSharedOverrides } from './lib/json-shared-overrides.js';
import { median, table } from './lib/stats.js';

const rounds = Number(process.argv[2] ?? 5);
const redisUrl = process.argv[3] ?? process.env.REDIS_URL;
const WRITES = 2000;
const BUDGET_MS = 5000;
/** Rules held before the timed writes; OVERRIDE_BENCH_SIZES=0,5000,100000 names others. */
const SIZES = (process.env.OVERRIDE_BENCH_SIZES ?? '0,10000,100000').split(',').map(Number);
/** The stores timed; OVERRIDE_BENCH_STORES=shared,shared-json names some of them (default: every one). */
const STORES = process.env.OVERRIDE_BENCH_STORES?.split(',');
const NOW = Date.now();
const request: HttpRequestInfo = {
  method: 'GET',
  path: '/items',
  headers: {},
  remoteAddress: '10.0.0.1',
  identity: { tenant: 'acme', client: 'web', tier: 'gold' },
};

function rule(i: number, ttlSeconds?: number): OverrideRule {
  return parseOverride(
    {
      pattern: `tenant:t${i}:client:web`,
      block: 429,
      ttlSeconds: ttlSeconds ?? 3600,
      reason: 'bench',
    },
    NOW,
    'bench',
  );
}

const change = (r: OverrideRule): OverrideChange => ({
  action: 'set',
  id: r.id,
  who: 'bench',
  at: NOW,
  reason: 'x',
});

/** Hides the store's log of changes, so that every write rebuilds the index from the whole list, as before. */
function withoutLog(store: OverrideStore): OverrideStore {
  const bare = new WeakMap<object, { version: number; rules: readonly OverrideRule[] }>();
  return {
    kind: store.kind,
    // One bare snapshot per snapshot of the store, so that the index is rebuilt per write, not per decision.
    snapshot: () => {
      const s = store.snapshot();
      let b = bare.get(s);
      if (b === undefined) {
        b = { version: s.version, rules: s.rules };
        bare.set(s, b);
      }
      return b;
    },
    set: (r, c) => store.set(r, c),
    remove: (id, c) => store.remove(id, c),
    history: () => store.history(),
    refresh: () => store.refresh(),
    close: () => store.close(),
  };
}

async function filled(open: Opener, size: number): Promise<OverrideStore> {
  const store = await open(size);
  for (let i = store.snapshot().rules.length; i < size; i++) {
    const r = rule(i);
    await store.set(r, change(r));
  }
  return store;
}

/** Writes per second of WRITES writes, each followed by one decision. */
async function writesPerSecond(store: OverrideStore, from: number): Promise<number> {
  const http = createHttpLimiter({
    limiter: new Limiter({
      policies: [{ name: 'rl.read', quota: 1e6, window: 60, burst: 1e6 }],
      store: new MemoryStore({ sweepIntervalMs: 0 }),
    }),
    rules: [{ name: 'all', policies: ['rl.read'], key: 'caller' }],
    overrides: store,
  });
  await http.evaluate(request);
  const t0 = performance.now();
  let i = 0;
  // At most WRITES writes or BUDGET_MS, whichever ends first: a rebuild per write of 100,000 rules takes minutes.
  for (; i < WRITES && performance.now() - t0 < BUDGET_MS; i++) {
    const r = rule(from + i);
    await store.set(r, change(r));
    await http.evaluate(request);
  }
  return (i / (performance.now() - t0)) * 1000;
}

/** Opens a store; one in Redis is filled with `size` rules in bulk first (the fill is not timed). */
type Opener = (size: number) => Promise<OverrideStore>;
const openers: [string, Opener][] = [
  ['memory', async () => new MemoryOverrides()],
  // The threads' store (`--threads`), filled by writes like the memory store.
  ['shared', async () => new SharedOverrides()],
  // The threads' store before its journal (D-G110), in a buffer large enough for 100,000 rules, filled at once.
  [
    'shared-json',
    async (size) => {
      const store = new JsonSharedOverrides({ bytes: 256 * 2 ** 20 });
      store.load(Array.from({ length: size }, (_, i) => rule(i)));
      return store;
    },
  ],
];
let closeRedis: (() => Promise<void>) | undefined;
if (redisUrl !== undefined) {
  const { Redis } = await import('ioredis');
  const { RedisOverrides } = await import('../packages/sluice/src/redis/index.js');
  const clients: InstanceType<typeof Redis>[] = [];
  let n = 0;
  openers.push([
    'redis',
    async (size) => {
      const client = new Redis(redisUrl);
      clients.push(client);
      const prefix = `bench-ow-${process.pid}-${n++}:`;
      // The rules as the store writes them, at version `size`, without a change log: the store reads them whole.
      for (let i = 0; i < size; i += 1000) {
        const batch = client.pipeline();
        for (let j = i; j < Math.min(size, i + 1000); j++) {
          const r = rule(j);
          batch.hset(`${prefix}{overrides}:rules`, r.id, JSON.stringify(r));
        }
        await batch.exec();
      }
      if (size > 0) await client.set(`${prefix}{overrides}:version`, String(size));
      const store = new RedisOverrides({ client, prefix });
      await store.refresh();
      return store;
    },
  ]);
  closeRedis = async () => {
    for (const c of clients) {
      await c.flushdb();
      c.disconnect();
    }
  };
}

const rows: string[][] = [];
let rss = 0;
for (const [kind, open] of openers) {
  if (STORES !== undefined && !STORES.includes(kind)) continue;
  for (const size of SIZES) {
    const before: number[] = [];
    const after: number[] = [];
    // One store per size, filled once; the two ways take turns on it, each round (it grows by their writes).
    const store = await filled(open, size);
    let next = size;
    for (let round = 0; round < rounds; round++) {
      after.push(await writesPerSecond(store, next));
      next += WRITES;
      before.push(await writesPerSecond(withoutLog(store), next));
      next += WRITES;
      rss = Math.max(rss, process.memoryUsage().rss);
    }
    store.close();
    const ratios = after.map((x, i) => x / before[i]);
    const spread = (xs: number[]) => `${Math.min(...xs).toFixed(0)} to ${Math.max(...xs).toFixed(0)}`;
    console.error(`measured ${kind} ${size}`);
    rows.push([
      kind,
      size.toLocaleString('en-US'),
      `${median(before).toFixed(0)}/s (${spread(before)})`,
      `${median(after).toFixed(0)}/s (${spread(after)})`,
      `${median(ratios).toFixed(1)}x`,
    ]);
  }
}
await closeRedis?.();
console.log(
  `Node ${process.version}, ${rounds} rounds of ${WRITES} writes, each followed by one decision; peak RSS ${(rss / 2 ** 20).toFixed(0)} MB.\n`,
);
console.log(
  table(['store', 'rules', 'index rebuilt per write', 'index updated from the log', 'median ratio'], rows),
);
