/**
 * One contender in one workload, in its own process: prefill every key, then time passes of about 400 ms and
 * print the median decisions per second. With `memory`, print bytes per tracked key instead.
 */
import { IMPLS, type ImplName, makeImpl } from './impls.js';
import { keySequence } from './workload.js';

const [name, workload, mode] = process.argv.slice(2) as [ImplName, string, string | undefined];
if (!IMPLS.includes(name)) throw new Error(`unknown contender ${name}`);
const { keys, seq } = keySequence(workload);
const impl = makeImpl(name, keys.length);
const gc = (globalThis as { gc?: () => void }).gc;

/** V8 heap plus memory outside it (Node's `external` already includes ArrayBuffers), so no layout hides its cost. */
function used(): number {
  const m = process.memoryUsage();
  return m.heapUsed + m.external;
}

async function prefill(): Promise<void> {
  for (const k of keys) {
    const r = impl.hit(k);
    if (impl.async) await r;
  }
}

async function main(): Promise<void> {
  if (mode === 'memory') {
    gc?.();
    gc?.();
    const before = used();
    await prefill();
    gc?.();
    gc?.();
    const after = used();
    // Keep the contender alive until after the reading.
    console.log(JSON.stringify({ bytesPerKey: (after - before) / keys.length, alive: impl !== null }));
    return;
  }
  await prefill();
  const mask = seq.length - 1;
  const rates: number[] = [];
  let i = 0;
  let sink = 0;
  for (let pass = 0; pass < 6; pass++) {
    const t0 = performance.now();
    let ops = 0;
    let dt = 0;
    do {
      if (impl.async) {
        for (let j = 0; j < 1024; j++) if (await impl.hit(keys[seq[i++ & mask]])) sink++;
      } else {
        for (let j = 0; j < 4096; j++) if (impl.hit(keys[seq[i++ & mask]])) sink++;
      }
      ops += impl.async ? 1024 : 4096;
      dt = performance.now() - t0;
    } while (dt < 400);
    if (pass > 0) rates.push((ops / dt) * 1000); // the first pass is warm-up
  }
  rates.sort((a, b) => a - b);
  console.log(JSON.stringify({ rate: rates[rates.length >> 1], sink }));
}

await main();
process.exit(0);
