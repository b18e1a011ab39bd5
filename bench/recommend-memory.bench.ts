/**
 * `sluice recommend` on a log of clients that send one request each (a flood of addresses, 5,000,000 by default)
 * among 100 clients at 30 requests a minute: peak resident memory (the bound is 1 GB for any log), CPU time, and
 * the counts the report gives (estimated past the tables). The built command as users run it, its usage reported
 * at exit by bench/replay/report-usage.mjs; `BENCH_ENTRY` runs another build of the log commands (a bundle of an
 * earlier commit, for a same-run comparison).
 *
 *   npx tsx bench/recommend-memory.bench.ts
 *   BENCH_CLIENTS=5000000 BENCH_ROUNDS=1 npx tsx bench/recommend-memory.bench.ts
 */
import { spawnSync } from 'node:child_process';
import { createWriteStream, existsSync, mkdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const CLIENTS = Number(process.env.BENCH_CLIENTS ?? 5_000_000);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 1);
const root = fileURLToPath(new URL('..', import.meta.url));
const usage = fileURLToPath(new URL('./replay/report-usage.mjs', import.meta.url));
const entry = process.env.BENCH_ENTRY ?? join(root, 'packages/gateway/bin/sluice.js');

const dir = join(tmpdir(), 'sluice-replay-bench');
mkdirSync(dir, { recursive: true });
const log = join(dir, `one-request-${CLIENTS}.log`);

/** One hour: each one-request client once, the 100 steady clients every 2 s, in time order. */
async function generate(file: string): Promise<void> {
  const out = createWriteStream(file);
  const t0 = Date.UTC(2026, 11, 3, 9, 0, 0);
  const p = (n: number) => String(n).padStart(2, '0');
  const stamp = (ms: number) => {
    const d = new Date(ms);
    return `${p(d.getUTCDate())}/Dec/2026:${p(d.getUTCHours())}:${p(d.getUTCMinutes())}:${p(d.getUTCSeconds())} +0000`;
  };
  const write = (s: string) =>
    out.write(s) ? Promise.resolve() : new Promise<void>((r) => out.once('drain', () => r()));
  let next = 0;
  for (let s = 0; s < 3600; s++) {
    const t = stamp(t0 + s * 1000);
    const lines: string[] = [];
    if (s % 2 === 0)
      for (let c = 0; c < 100; c++)
        lines.push(`198.18.0.${c} - - [${t}] "GET /api/items HTTP/1.1" 200 1 "-" "b"`);
    const end = Math.floor(((s + 1) * CLIENTS) / 3600);
    for (; next < end; next++)
      lines.push(
        `10.${(next >>> 16) & 255}.${(next >>> 8) & 255}.${next & 255} - - [${t}] "GET /api/items/${next % 1000} HTTP/1.1" 200 1 "-" "b"`.replace(
          /^10\./,
          `${10 + (next >>> 24)}.`,
        ),
      );
    await write(`${lines.join('\n')}\n`);
  }
  await new Promise<void>((r) => out.end(() => r()));
}

if (!existsSync(log)) {
  console.error(`generating ${log}`);
  await generate(log);
}

const rows: string[] = [];
for (let round = 0; round < ROUNDS; round++) {
  const r = spawnSync(process.execPath, ['--import', usage, entry, 'recommend', '--json', log], {
    encoding: 'utf8',
    maxBuffer: 1 << 30,
  });
  const marker = r.stderr.lastIndexOf('BENCH_USAGE ');
  if (marker < 0) throw new Error(`sluice recommend reported no usage: ${r.stderr}`);
  const u = JSON.parse(r.stderr.slice(marker + 12).trim()) as { cpuSeconds: number; maxRssMB: number };
  const j = JSON.parse(r.stdout) as {
    requests: number;
    clients: number;
    clientsEstimated?: boolean;
    proposals: { name: string; perMinute: number }[];
  };
  const standard = j.proposals.find((p) => p.name === 'standard')?.perMinute;
  rows.push(
    `| ${j.requests.toLocaleString('en-US')} | ${j.clients.toLocaleString('en-US')}${j.clientsEstimated === true ? ' (estimated)' : ''} | ${standard} | ${u.cpuSeconds.toFixed(1)} | ${u.maxRssMB.toFixed(0)} |`,
  );
}
console.log(`### recommend: ${CLIENTS.toLocaleString('en-US')} one-request clients and 100 at 30 a minute\n`);
console.log(
  '| requests | clients | standard per minute | CPU s | max RSS MB |\n| --- | --- | --- | --- | --- |',
);
for (const row of rows) console.log(row);
