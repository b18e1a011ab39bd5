/** Times sweep slices over a million full buckets: the longest slice is how long one sweep step blocks. */
import { definePolicy, ManualClock, SingleDecision } from '../../packages/sluice/src/core/index.js';
import { MemoryStore } from '../../packages/sluice/src/memory/index.js';

const clock = new ManualClock();
const policy = definePolicy({ name: 'rl.bench', quota: 120, window: 60, burst: 30 });
const store = new MemoryStore({ maxTrackedKeys: 1_000_000, sweepIntervalMs: 0, clock });
const slice = store.options.sweepSliceSize;
const into = new SingleDecision();
for (let i = 0; i < 1_000_000; i++) store.decideOne(policy, `user:${i}`, 1, into);
// Half the buckets full, half not: the worst case examines every slot and deletes half of them.
clock.advance(30_000);
for (let i = 0; i < 1_000_000; i += 2) store.decideOne(policy, `user:${i}`, 30, into);
const times: number[] = [];
for (let from = 0; from < 1_000_000; from += slice) {
  const t0 = performance.now();
  store.sweepSlice(from, slice);
  times.push(performance.now() - t0);
}
times.sort((a, b) => a - b);
console.log(
  JSON.stringify({
    slice,
    slices: times.length,
    medianMs: times[times.length >> 1],
    p99Ms: times[Math.floor(times.length * 0.99)],
    maxMs: times[times.length - 1],
    left: store.size,
  }),
);
