/**
 * `sluice replay` and `sluice recommend` over a generated NGINX combined log of 1,000,000 lines (50,000 clients,
 * Zipf clients and paths, one hour) with the example configuration. Each pass runs in a fresh process
 * (bench/replay/replay-once.ts); the modes alternate round by round: `read` (cutting lines only), `parse`
 * (lines and the combined-format parser), `replay` (the whole replay: parse, admission, counts) and `recommend`
 * (measure, propose, and the confirming replays). Rates are lines per second of wall time and per second of the
 * process's CPU time (the fairer figure on a shared machine), medians with the range over rounds; ratios are of
 * medians within the run.
 *
 *   npx tsx bench/replay.bench.ts
 *   BENCH_ROUNDS=5 BENCH_LINES=1000000 npx tsx bench/replay.bench.ts
 *   BENCH_LINES=10000000 BENCH_MODES=replay BENCH_ROUNDS=1 npx tsx bench/replay.bench.ts   (the long run: RSS)
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { median, rate, ratio, table } from './lib/stats.js';
import { generateLog } from './replay/generate-log.js';

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const LINES = Number(process.env.BENCH_LINES ?? 1_000_000);
const CLIENTS = Number(process.env.BENCH_CLIENTS ?? 50_000);
const MODES = (process.env.BENCH_MODES ?? 'read,parse,replay,recommend').split(',');
const once = fileURLToPath(new URL('./replay/replay-once.ts', import.meta.url));

interface Pass {
  readonly lines: number;
  readonly seconds: number;
  readonly cpuSeconds: number;
  readonly linesPerSecond: number;
  readonly linesPerCpuSecond: number;
  readonly maxRssMB: number;
}

const dir = join(tmpdir(), 'sluice-replay-bench');
mkdirSync(dir, { recursive: true });
const log = join(dir, `combined-${LINES}-${CLIENTS}.log`);
if (!existsSync(log)) {
  console.error(`generating ${log}`);
  await generateLog(log, LINES, CLIENTS, Math.max(3600, Math.round(LINES / 280)));
}

const passes = new Map<string, Pass[]>(MODES.map((m) => [m, []]));
for (let round = 0; round < ROUNDS; round++) {
  const order = round % 2 === 0 ? MODES : [...MODES].reverse();
  for (const mode of order) {
    const r = spawnSync(process.execPath, ['--import', 'tsx', once, mode, log], { encoding: 'utf8' });
    if (r.status !== 0) throw new Error(`${mode} failed: ${r.stderr}`);
    passes.get(mode)?.push(JSON.parse(r.stdout.trim().split('\n').pop() as string) as Pass);
  }
}

const med = (mode: string, k: keyof Pass) => median((passes.get(mode) ?? []).map((p) => p[k]));
const range = (mode: string, k: keyof Pass) => {
  const v = (passes.get(mode) ?? []).map((p) => p[k]);
  return `${rate(Math.min(...v))} to ${rate(Math.max(...v))}`;
};
const base = MODES.includes('replay') ? 'replay' : MODES[0];
console.log(
  `### Replay: lines per second, ${rate(LINES)} lines, ${rate(CLIENTS)} clients (median of ${ROUNDS} fresh processes per mode)\n`,
);
console.log(
  table(
    ['mode', 'lines/s (wall)', 'range', 'lines per CPU second', 'range', `CPU time vs ${base}`, 'max RSS MB'],
    MODES.map((m) => [
      m,
      rate(med(m, 'linesPerSecond')),
      range(m, 'linesPerSecond'),
      rate(med(m, 'linesPerCpuSecond')),
      range(m, 'linesPerCpuSecond'),
      ratio(med(m, 'cpuSeconds') / med(m, 'lines'), med(base, 'cpuSeconds') / med(base, 'lines')),
      Math.max(...(passes.get(m) ?? []).map((p) => p.maxRssMB)).toFixed(0),
    ]),
  ),
);
console.log('\n`recommend` counts every line once per replay it ran (the measure and each confirmation).');
