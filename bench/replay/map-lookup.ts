/**
 * What one `Map` lookup of a client address costs at the replay benchmark's scale: the first field of every line
 * of a log, cut from the line as the parser cuts it, looked up in a map of all the log's distinct clients (the
 * size of the address and key caches, and of each policy's bucket map, for 50,000 clients) and in a map of 4,096
 * of them; the cut alone is the baseline. Microseconds per line, best of three passes.
 *
 *   npx tsx bench/replay/map-lookup.ts /tmp/sluice-replay-bench/combined-1000000-50000.log
 */
import { readFileSync } from 'node:fs';

const file = process.argv[2] ?? '/tmp/sluice-replay-bench/combined-1000000-50000.log';
const text = readFileSync(file, 'latin1');
const lines: string[] = [];
for (let s = 0, nl = text.indexOf('\n'); nl >= 0; s = nl + 1, nl = text.indexOf('\n', s)) {
  lines.push(text.slice(s, nl));
}
const all = new Map<string, string>();
for (const l of lines) {
  const c = l.slice(0, l.indexOf(' '));
  if (!all.has(c)) all.set(c, `ip:${c}`);
}
const small = new Map([...all].slice(0, 4096));

function time(f: (line: string) => string | undefined): number {
  let best = Number.POSITIVE_INFINITY;
  let sink = 0;
  for (let round = 0; round < 3; round++) {
    const t0 = performance.now();
    for (const l of lines) sink += f(l)?.length ?? 0;
    best = Math.min(best, (performance.now() - t0) * 1000);
  }
  if (sink < 0) console.log(sink);
  return best / lines.length;
}

const cut = (l: string) => l.slice(0, l.indexOf(' '));
const base = time(cut);
console.log(`${lines.length} lines, ${all.size} distinct clients`);
console.log(`cut only: ${base.toFixed(3)} us a line`);
console.log(
  `cut + lookup in all ${all.size}: ${(time((l) => all.get(cut(l))) - base).toFixed(3)} us a lookup`,
);
console.log(`cut + lookup in 4,096: ${(time((l) => small.get(cut(l))) - base).toFixed(3)} us a lookup`);
