/**
 * What 100,000 rules cost in the threads' overrides store (D-G110, D-G111): sets them one write at a time through
 * `SharedOverrides.set`, a second instance on the same buffer (as another thread holds it) and a limiter on it
 * deciding every 1,000 writes, then reads the list. Prints the heap both copies hold after a collection, the
 * process's RSS, the bytes of the buffer's journal written (its high-water mark, the resident part of the buffer)
 * and what a compaction would write, and the writes per second of the fill.
 *
 * Run: node --expose-gc --import tsx bench/shared-overrides-memory.bench.ts [rules=100000]
 */
import { Limiter, parseOverride } from '../packages/sluice/src/core/index.js';
import { createHttpLimiter } from '../packages/sluice/src/http/index.js';
import { MemoryStore } from '../packages/sluice/src/memory/index.js';
import { SharedOverrides } from '../packages/sluice/src/shared/index.js';

const size = Number(process.argv[2] ?? 100_000);
const gc = (globalThis as { gc?: () => void }).gc;
if (gc === undefined) throw new Error('run with node --expose-gc --import tsx');
const NOW = Date.now();
gc();
const heap0 = process.memoryUsage().heapUsed;
const writer = new SharedOverrides();
const reader = new SharedOverrides({ buffer: writer.buffer });
const http = createHttpLimiter({
  limiter: new Limiter({
    policies: [{ name: 'rl.read', quota: 1e6, window: 60, burst: 1e6 }],
    store: new MemoryStore({ sweepIntervalMs: 0 }),
  }),
  rules: [{ name: 'all', policies: ['rl.read'], key: 'caller' }],
  overrides: reader,
});
const request = { method: 'GET', path: '/', headers: {}, remoteAddress: '10.0.0.1' };
const t0 = performance.now();
for (let i = 0; i < size; i++) {
  const rule = parseOverride(
    { pattern: `tenant:t${i}:client:web`, block: 429, ttlSeconds: 3600, reason: 'bench' },
    NOW,
    'penalty',
  );
  await writer.set(
    rule,
    { action: 'set', id: rule.id, who: 'penalty', at: NOW, reason: 'x' },
    { automatic: true },
  );
  if (i % 1000 === 0) await http.evaluate(request);
}
const seconds = (performance.now() - t0) / 1000;
await http.evaluate(request);
if (reader.snapshot().rules.length !== size) throw new Error('a rule is missing');
gc();
const heap = process.memoryUsage().heapUsed - heap0;
// Header words (shared/override-journal.ts): the journal's end, and the bytes a compaction would write now.
const journal = new Int32Array(writer.buffer, 0, 8)[4];
const live = new Int32Array(writer.buffer, 0, 8)[5];
console.log(
  `${size.toLocaleString('en-US')} rules: ${(size / seconds).toFixed(0)} writes/s over the fill; heap of two copies and one index ${(heap / 2 ** 20).toFixed(0)} MB (${(heap / size).toFixed(0)} bytes per rule); RSS ${(process.memoryUsage().rss / 2 ** 20).toFixed(0)} MB; journal ${(journal / 2 ** 20).toFixed(1)} MB of ${(writer.buffer.byteLength / 2 ** 20).toFixed(0)} MB, ${(live / 2 ** 20).toFixed(1)} MB once compacted`,
);
