/**
 * `sluice replay` and `sluice recommend` over a generated NGINX combined log of 1,000,000 lines (50,000 clients,
 * Zipf clients and paths, one hour) with the example configuration. Each pass runs in a fresh process; the modes
 * alternate round by round: `read` (cutting lines only) and `parse` (lines and the combined-format parser), both
 * in bench/replay/replay-once.ts, then `replay` and `recommend`, the built `sluice` command itself as users run
 * it (`node packages/gateway/bin/sluice.js replay --json --config ... LOG`), start-up included, its usage
 * reported at exit by a preloaded module (bench/replay/report-usage.mjs). The benchmark builds the tree first
 * (`npm run build`, quick when nothing changed). Rates are lines per second of wall time and per second of the
 * process's CPU time (the fairer figure on a shared machine), medians with the range over rounds; ratios are of
 * medians within the run.
 *
 *   npx tsx bench/replay.bench.ts
 *   BENCH_ROUNDS=5 BENCH_LINES=1000000 npx tsx bench/replay.bench.ts
 *   BENCH_LINES=10000000 BENCH_MODES=replay BENCH_ROUNDS=1 npx tsx bench/replay.bench.ts   (the long run: RSS)
 *   BENCH_BEFORE=/tmp/before BENCH_MODES=replay,replay-before npx tsx bench/replay.bench.ts
 *
 * `replay-before` runs the `sluice` command of another built tree (`BENCH_BEFORE`, for example `git archive` of the
 * commit before a change, built with `npx tsc -b packages/sluice packages/gateway`), round by round with this one.
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
const usage = fileURLToPath(new URL('./replay/report-usage.mjs', import.meta.url));
const root = fileURLToPath(new URL('..', import.meta.url));
const sluice = join(root, 'packages/gateway/bin/sluice.js');
const example = join(root, 'packages/gateway/examples/rate-limits.yaml');
const before = process.env.BENCH_BEFORE;

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

if (MODES.includes('replay') || MODES.includes('recommend')) {
  const built = spawnSync('npm', ['run', '-s', 'build'], { cwd: root, encoding: 'utf8' });
  if (built.status !== 0) throw new Error(`npm run build failed: ${built.stdout}${built.stderr}`);
}

/** One pass of the built command: its JSON report for the line count, its usage from the preloaded module. */
function command(mode: 'replay' | 'replay-before' | 'recommend'): Pass {
  const args =
    mode === 'recommend' ? ['recommend', '--json', log] : ['replay', '--json', '--config', example, log];
  if (mode === 'replay-before' && before === undefined) throw new Error('replay-before needs BENCH_BEFORE');
  const bin = mode === 'replay-before' ? join(before as string, 'packages/gateway/bin/sluice.js') : sluice;
  const r = spawnSync(process.execPath, ['--import', usage, bin, ...args], {
    encoding: 'utf8',
    maxBuffer: 1 << 30,
  });
  if (r.status !== 0) throw new Error(`sluice ${mode} failed: ${r.stderr}`);
  const marker = r.stderr.lastIndexOf('BENCH_USAGE ');
  if (marker < 0) throw new Error(`sluice ${mode} reported no usage: ${r.stderr}`);
  const u = JSON.parse(r.stderr.slice(marker + 12).trim()) as Pick<
    Pass,
    'seconds' | 'cpuSeconds' | 'maxRssMB'
  >;
  const report = JSON.parse(r.stdout) as {
    logs?: { lines: number }[];
    requests?: number;
    confirmation?: { rounds: number };
  };
  // recommend counts every line once per replay it ran: the measure and each confirmation.
  const lines =
    mode !== 'recommend'
      ? (report.logs?.[0]?.lines ?? 0)
      : (report.requests ?? 0) * ((report.confirmation?.rounds ?? 0) + 1);
  return { ...u, lines, linesPerSecond: lines / u.seconds, linesPerCpuSecond: lines / u.cpuSeconds };
}

const passes = new Map<string, Pass[]>(MODES.map((m) => [m, []]));
for (let round = 0; round < ROUNDS; round++) {
  const order = round % 2 === 0 ? MODES : [...MODES].reverse();
  for (const mode of order) {
    if (mode === 'replay' || mode === 'replay-before' || mode === 'recommend') {
      passes.get(mode)?.push(command(mode));
      continue;
    }
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

/*
 * Ratios of one round's passes, which share that round's machine load: each command's speed against parsing alone
 * (lines per CPU second over parse's), and `replay` against `replay-before` (CPU per line). Medians with their
 * range over rounds, so that a change is read against the spread it has to beat.
 */
const perRound = (a: string, b: string, f: (x: Pass, y: Pass) => number): number[] => {
  const xs = passes.get(a) ?? [];
  const ys = passes.get(b) ?? [];
  return xs.slice(0, ys.length).map((x, i) => f(x, ys[i]));
};
const speedVsParse = (x: Pass, p: Pass) => x.linesPerCpuSecond / p.linesPerCpuSecond;
const spread = (v: readonly number[]) =>
  `${median(v).toFixed(3)}x (${Math.min(...v).toFixed(3)}x to ${Math.max(...v).toFixed(3)}x)`;
const rows: string[][] = [];
for (const m of ['replay', 'replay-before', 'recommend']) {
  if (MODES.includes(m) && MODES.includes('parse'))
    rows.push([`${m} vs parse`, spread(perRound(m, 'parse', speedVsParse))]);
}
if (MODES.includes('replay') && MODES.includes('replay-before')) {
  const cpu = perRound(
    'replay',
    'replay-before',
    (x, y) => x.cpuSeconds / x.lines / (y.cpuSeconds / y.lines),
  );
  rows.push(['replay CPU per line vs replay-before', spread(cpu)]);
  rows.push(['rounds replay cheaper', `${cpu.filter((r) => r < 1).length} of ${cpu.length}`]);
}
if (rows.length > 0) {
  console.log(`\n### Per-round ratios (median of ${ROUNDS} rounds, range)\n`);
  console.log(table(['ratio', 'median (min to max)'], rows));
}
