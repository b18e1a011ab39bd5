/**
 * What concurrency limits cost, and that a limiter without them pays nothing for their seam, in one process:
 *
 * 1. A concurrency take and release on the memory store: `decide` of one concurrency check (admitted) then
 *    `refund` of it, per pair, against a rate-only `decide` of one check; nanoseconds per operation.
 * 2. `HttpLimiter.evaluate` of a request whose rules hold no concurrency policy, through this tree's `sluice/http`
 *    and through other sources exported with `git archive` into a scratch folder of the repository (removed at
 *    exit), interleaved in slices: `BENCH_BEFORE=<commit>` (default 5d3a841, the commit before the
 *    response-observer seam), or `BENCH_BEFORE=seam`: this commit's sources with the seam's per-request lines taken
 *    out of `http-limiter.ts` (the check for slots after a decision), so only they differ. And the same request
 *    through a concurrency rule, with its observer ended, for the cost when used.
 *
 *   npx tsx bench/capacity.bench.ts
 *   BENCH_ROUNDS=11 BENCH_OPS=2000000 npx tsx bench/capacity.bench.ts
 */

import { execFileSync } from 'node:child_process';
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Limiter } from '../packages/sluice/src/core/index.js';
import { createHttpLimiter, type HttpRequestInfo, type Verdict } from '../packages/sluice/src/http/index.js';
import { MemoryStore } from '../packages/sluice/src/memory/index.js';
import { median, table } from './lib/stats.js';

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 7);
const OPS = Number(process.env.BENCH_OPS ?? 1_000_000);
const BEFORE = process.env.BENCH_BEFORE ?? '5d3a841';

const scratch = join(process.cwd(), '.bench-before');
rmSync(scratch, { recursive: true, force: true });
mkdirSync(scratch, { recursive: true });
process.on('exit', () => rmSync(scratch, { recursive: true, force: true }));
const archive = execFileSync('git', ['archive', BEFORE === 'seam' ? 'HEAD' : BEFORE, 'packages/sluice/src'], {
  maxBuffer: 1 << 28,
});
execFileSync('tar', ['-x', '-C', scratch], { input: archive });
if (BEFORE === 'seam') {
  // This commit without the seam's per-request work: the verdict is returned as decided.
  const file = join(scratch, 'packages/sluice/src/http/http-limiter.ts');
  const text = readFileSync(file, 'utf8');
  const cut = text
    .replace(
      'return hasSlots(checks) ? holding(v, limiter.store, checks, cost, o.onStoreError) : v;',
      'return v;',
    )
    .replace(
      'return hasSlots(decidedChecks) ? holding(v, limiter.store, decidedChecks, cost, o.onStoreError) : v;',
      'return v;',
    );
  if (cut === text || cut.includes('hasSlots(checks) ?')) throw new Error('the seam lines were not found');
  writeFileSync(file, cut);
}
const old = {
  core: (await import(
    join(scratch, 'packages/sluice/src/core/index.ts')
  )) as typeof import('../packages/sluice/src/core/index.js'),
  http: (await import(
    join(scratch, 'packages/sluice/src/http/index.ts')
  )) as typeof import('../packages/sluice/src/http/index.js'),
  memory: (await import(
    join(scratch, 'packages/sluice/src/memory/index.ts')
  )) as typeof import('../packages/sluice/src/memory/index.js'),
};

/** Nanoseconds per call of `f` over `n` calls. */
function nsPer(n: number, f: () => void): number {
  const t0 = process.hrtime.bigint();
  for (let i = 0; i < n; i++) f();
  return Number(process.hrtime.bigint() - t0) / n;
}

// 1. Take and release on the memory store.
const store = new MemoryStore({ sweepIntervalMs: 0 });
const limiter = new Limiter({
  policies: [
    { name: 'slots', concurrent: 1_000_000 },
    { name: 'rate', quota: 1_000_000_000, window: 1, burst: 1_000_000_000 },
  ],
  store,
});
const slot = [{ policy: limiter.policy('slots'), key: 'k' }];
const rate = [{ policy: limiter.policy('rate'), key: 'k' }];

// 2. evaluate without concurrency, this tree against the commit before; and with a concurrency rule.
const REQUEST: HttpRequestInfo = {
  method: 'GET',
  path: '/api/items',
  headers: {},
  remoteAddress: '192.0.2.1',
};
const REPORT: HttpRequestInfo = { ...REQUEST, path: '/api/reports/1' };
const RULES = [
  { path: '/api/*', policies: ['rate'] },
  { path: '/api/reports/*', policies: ['slots'] },
];
const POLICIES = [
  { name: 'rate', quota: 1_000_000_000, window: 1, burst: 1_000_000_000 },
  { name: 'slots', concurrent: 1_000_000 },
];
const now = createHttpLimiter({
  limiter: new Limiter({ policies: POLICIES, store: new MemoryStore({ sweepIntervalMs: 0 }) }),
  rules: RULES,
});
const before = old.http.createHttpLimiter({
  limiter: new old.core.Limiter({
    // The commit before the seam knows no concurrency policy; this commit without the seam gets the same as now.
    policies: BEFORE === 'seam' ? POLICIES : [POLICIES[0]],
    store: new old.memory.MemoryStore({ sweepIntervalMs: 0 }),
  }),
  rules: BEFORE === 'seam' ? RULES : [RULES[0]],
});
const END = { completed: true, status: 200, bytesSent: 0, bytesReceived: 0 };

const rows: Record<string, number[]> = {
  take: [],
  rateOnly: [],
  evalNow: [],
  evalBefore: [],
  evalSlots: [],
  ratio: [],
};
for (let r = 0; r < ROUNDS; r++) {
  rows.take.push(
    nsPer(OPS, () => {
      store.decide(slot, 1);
      store.refund(slot, 1);
    }),
  );
  rows.rateOnly.push(nsPer(OPS, () => store.decide(rate, 1)));
  // Interleaved in small slices, so that the load of a shared machine falls on both alike.
  const SLICES = 50;
  let n = 0;
  let o = 0;
  for (let k = 0; k < SLICES; k++) {
    const first = (k + r) % 2 === 0;
    if (first) o += nsPer(OPS / SLICES, () => before.evaluate(REQUEST));
    n += nsPer(OPS / SLICES, () => now.evaluate(REQUEST));
    if (!first) o += nsPer(OPS / SLICES, () => before.evaluate(REQUEST));
  }
  n /= SLICES;
  o /= SLICES;
  rows.evalNow.push(n);
  rows.evalBefore.push(o);
  rows.ratio.push(o / n);
  rows.evalSlots.push(
    nsPer(OPS, () => {
      (now.evaluate(REPORT) as Verdict).observer?.end(END);
    }),
  );
}

const f = (xs: number[], digits = 1) =>
  `${median(xs).toFixed(digits)} (${Math.min(...xs).toFixed(digits)} to ${Math.max(...xs).toFixed(digits)})`;
console.log(
  `capacity bench: ${ROUNDS} rounds of ${OPS} operations, Node.js ${process.versions.node}, against ${BEFORE}\n`,
);
console.log(
  table(
    ['figure', 'median (lowest to highest)'],
    [
      ['memory store: concurrency take + release, ns per pair', f(rows.take)],
      ['memory store: rate-only decide of one check, ns', f(rows.rateOnly)],
      ['evaluate, no concurrency rule, this tree, ns', f(rows.evalNow)],
      [`evaluate, no concurrency rule, ${BEFORE}, ns`, f(rows.evalBefore)],
      [`throughput ratio this tree / ${BEFORE} (per round)`, `${f(rows.ratio, 2)}x`],
      ['evaluate through a concurrency rule + observer end, ns', f(rows.evalSlots)],
    ],
  ),
);
