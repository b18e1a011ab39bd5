/**
 * Engine benchmark: decisions per second for 1 key, 10k and 1M keys (uniform and Zipf) and bytes per tracked key
 * at 1M keys, for Sluice's memory store and its peers, each contender in a fresh process, rounds interleaved
 * (A B C D E, then E D C B A, ...) so that drift on a busy machine spreads over all of them. Prints Markdown.
 *
 * Run: npx tsx bench/engine.bench.ts [rounds=3]; BENCH_WORKLOADS=1 npx tsx bench/engine.bench.ts 9 (one workload)
 */

import { IMPLS } from './engine/impls.js';
import { runWorker } from './lib/child.js';
import { median, rate, ratio, table } from './lib/stats.js';

const rounds = Number(process.argv[2] ?? 3);
// BENCH_WORKLOADS=1,10k runs only those workloads (and skips the memory and sweep parts).
const only = process.env.BENCH_WORKLOADS?.split(',').filter(Boolean);
const workloads = only ?? ['1', '10k', '10k-zipf', '1m', '1m-zipf'];
const worker = new URL('./engine/worker.ts', import.meta.url);

const rates = new Map<string, number[]>();
for (const w of workloads) {
  for (let r = 0; r < rounds; r++) {
    const order = r % 2 === 0 ? [...IMPLS] : [...IMPLS].reverse();
    for (const impl of order) {
      const { rate: value } = await runWorker<{ rate: number }>(worker, [impl, w]);
      const k = `${w}/${impl}`;
      rates.set(k, [...(rates.get(k) ?? []), value]);
      process.stderr.write(`  ${k.padEnd(32)} ${rate(value)}/s\n`);
    }
  }
}

const memory = new Map<string, number[]>();
for (let r = 0; r < (only === undefined ? Math.min(rounds, 2) : 0); r++) {
  for (const impl of IMPLS) {
    const { bytesPerKey } = await runWorker<{ bytesPerKey: number }>(
      worker,
      [impl, '1m', 'memory'],
      ['--expose-gc'],
    );
    memory.set(impl, [...(memory.get(impl) ?? []), bytesPerKey]);
    process.stderr.write(`  memory/${impl.padEnd(25)} ${bytesPerKey.toFixed(1)} B/key\n`);
  }
}

const sweeps = [];
for (let r = 0; r < (only === undefined ? Math.min(rounds, 3) : 0); r++) {
  sweeps.push(
    await runWorker<{ slice: number; medianMs: number; p99Ms: number; maxMs: number }>(
      new URL('./engine/sweep-worker.ts', import.meta.url),
      [],
    ),
  );
}

const med = (k: string) => median(rates.get(k) ?? [Number.NaN]);
/** The median and range of `a / b` taken round by round (the two ran next to each other in each round). */
function perRound(w: string, a: string, b: string): string {
  const as = rates.get(`${w}/${a}`) ?? [];
  const bs = rates.get(`${w}/${b}`) ?? [];
  const r = as.map((v, i) => v / bs[i]).sort((x, y) => x - y);
  return `${median(r).toFixed(2)}x (${r[0].toFixed(2)} to ${r[r.length - 1].toFixed(2)})`;
}
console.log(
  `### Engine: decisions per second (median of ${rounds} processes, each the median of 5 passes)\n`,
);
console.log(
  table(
    [
      'workload',
      ...IMPLS,
      'sluice / naive',
      'check / naive',
      'check / naive per round',
      'sluice / rate-limiter-flexible',
      'sluice / express-rate-limit',
      'sluice / limiter',
    ],
    workloads.map((w) => [
      w,
      ...IMPLS.map((i) => rate(med(`${w}/${i}`))),
      ratio(med(`${w}/sluice`), med(`${w}/naive`)),
      ratio(med(`${w}/sluice-check`), med(`${w}/naive`)),
      perRound(w, 'sluice-check', 'naive'),
      ratio(med(`${w}/sluice`), med(`${w}/rate-limiter-flexible`)),
      ratio(med(`${w}/sluice`), med(`${w}/express-rate-limit`)),
      ratio(med(`${w}/sluice`), med(`${w}/limiter`)),
    ]),
  ),
);
if (only !== undefined) process.exit(0);
console.log(`\n### Engine: bytes per tracked key at 1M keys (heapUsed + external, median)\n`);
console.log(
  table(
    ['contender', 'bytes per key'],
    IMPLS.map((i) => [i, median(memory.get(i) ?? []).toFixed(1)]),
  ),
);
console.log(`\n### Engine: sweep slice over 1M buckets (half full), ${sweeps[0].slice} slots per slice\n`);
console.log(
  table(
    ['run', 'median ms', 'p99 ms', 'max ms'],
    sweeps.map((s, i) => [String(i + 1), s.medianMs.toFixed(3), s.p99Ms.toFixed(3), s.maxMs.toFixed(3)]),
  ),
);
