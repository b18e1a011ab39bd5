/**
 * Shared store benchmark: what the shared-memory table (sluice/shared) costs in one thread against the memory
 * store, which needs no lock and no hashing. Decisions on 10,000 keys (one policy, `decideOne` into a reused
 * decision, the gateway's path) and on two policies at once (`decide`, all or nothing), plus a key churn of
 * 1,000,000 distinct keys through a 100,000-key cap (inserts and evictions). One process, contenders
 * interleaved, medians of the passes.
 *
 * Run: npx tsx bench/shared-store.bench.ts [rounds=5]
 */
import { definePolicy, SingleDecision } from '../packages/sluice/src/core/index.js';
import { MemoryStore } from '../packages/sluice/src/memory/index.js';
import { SharedStore } from '../packages/sluice/src/shared/index.js';
import { interleavedPasses, type PassContender } from './lib/passes.js';
import { median, rate, ratio, table } from './lib/stats.js';

const rounds = Number(process.argv[2] ?? 5);
const N = 300_000;
const KEYS = Array.from({ length: 10_000 }, (_, i) => `user:${i}`);
const CHURN = Array.from({ length: 1_000_000 }, (_, i) => `churn:${i}`);
const minute = definePolicy({ name: 'rl.minute', quota: 600, window: 60, burst: 100 });
const hour = definePolicy({ name: 'rl.hour', quota: 10_000, window: 3600, burst: 1000 });

type Store = MemoryStore | SharedStore;
const stores: Record<string, (cap: number) => Store> = {
  memory: (cap) => new MemoryStore({ sweepIntervalMs: 0, maxTrackedKeys: cap }),
  shared: (cap) => new SharedStore({ sweepIntervalMs: 0, maxTrackedKeys: cap }),
};

const contenders: PassContender[] = [];
for (const [name, make] of Object.entries(stores)) {
  contenders.push(
    {
      name: `${name}: one policy, 10k keys`,
      setup: () => {
        const s = make(100_000);
        const into = new SingleDecision();
        return (i) => void s.decideOne(minute, KEYS[i % KEYS.length], 1, into);
      },
    },
    {
      name: `${name}: two policies, 10k keys`,
      setup: () => {
        const s = make(100_000);
        const lists = KEYS.map((key) => [
          { policy: minute, key },
          { policy: hour, key },
        ]);
        return (i) => void s.decide(lists[i % lists.length], 1);
      },
    },
    {
      name: `${name}: churn, 100k cap`,
      setup: () => {
        const s = make(100_000);
        const into = new SingleDecision();
        return (i) => void s.decideOne(minute, CHURN[i % CHURN.length], 1, into);
      },
    },
  );
}

const results = interleavedPasses(contenders, rounds, N);
const rows: string[][] = [];
for (const workload of ['one policy, 10k keys', 'two policies, 10k keys', 'churn, 100k cap']) {
  const m = median(results.get(`memory: ${workload}`) ?? []);
  const s = median(results.get(`shared: ${workload}`) ?? []);
  rows.push([workload, `${rate(m)}/s`, `${rate(s)}/s`, ratio(s, m)]);
}
console.log(`Node ${process.version}, one thread, median of ${rounds} passes of ${N} decisions.\n`);
console.log(table(['workload', 'MemoryStore', 'SharedStore', 'shared / memory'], rows));
