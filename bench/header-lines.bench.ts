/**
 * What building the rate-limit header lines costs `HttpLimiter.evaluate`, in one process: the gateway benchmark's
 * plan (a tier with a minute and an hour bucket and an endpoint rule, keyed by IP, `headers: both` as the gateway
 * sends by default: draft-11 `RateLimit` and `RateLimit-Policy` and the four `X-RateLimit-*` lines) against the
 * same plan with `headers: none`, alternating 200,000 allowed decisions of each for BENCH_ROUNDS rounds. The
 * difference is the JavaScript the header lines cost; what Node.js then spends writing their bytes is the
 * gateway benchmark's "node proxy + gateway's header lines" row, which sends the same bytes precomputed.
 *
 *   taskset -c 1 npx tsx bench/header-lines.bench.ts
 */
import { Limiter } from '../packages/sluice/src/core/index.js';
import { createHttpLimiter, type HttpRequestInfo } from '../packages/sluice/src/http/index.js';
import { MemoryStore } from '../packages/sluice/src/memory/index.js';
import { median } from './lib/stats.js';

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 20);
const CALLS = 200_000;

function plan(headers: 'both' | 'none') {
  const limiter = new Limiter({
    policies: [
      { name: 'bench', quota: 600_000_000, window: 60, burst: 100_000_000 },
      { name: 'bench.hour', quota: 1_000_000_000, window: 3600, burst: 1_000_000_000 },
      { name: '/api/*', quota: 600_000_000, window: 60 },
    ],
    store: new MemoryStore(),
  });
  return createHttpLimiter({
    limiter,
    rules: [
      { policies: ['bench', 'bench.hour'], key: 'ip' },
      { policies: ['/api/*'], key: 'ip', path: '/api/*' },
    ],
    headers,
  });
}

const request: HttpRequestInfo = {
  method: 'GET',
  path: '/api/x',
  headers: { host: '127.0.0.1:8080', 'user-agent': 'wrk', accept: '*/*' },
  remoteAddress: '127.0.0.1',
};

/** Nanoseconds of CPU per decision. */
function run(limiter: ReturnType<typeof plan>): number {
  let lines = 0;
  const before = process.cpuUsage();
  for (let i = 0; i < CALLS; i++) {
    const v = limiter.evaluate(request);
    if (v instanceof Promise) throw new Error('the memory store answers at once');
    lines += v.headers.length;
  }
  const used = process.cpuUsage(before);
  if (lines === 0 && limiter === both) throw new Error('no header lines');
  return ((used.user + used.system) * 1000) / CALLS;
}

const both = plan('both');
const none = plan('none');
for (let i = 0; i < 3; i++) {
  run(both);
  run(none);
}
const withLines: number[] = [];
const without: number[] = [];
const diff: number[] = [];
for (let r = 0; r < ROUNDS; r++) {
  const a = r % 2 === 0 ? run(both) : 0;
  const b = run(none);
  const c = r % 2 === 0 ? a : run(both);
  withLines.push(c);
  without.push(b);
  diff.push(c - b);
}
const f = (v: number[]) =>
  `${median(v).toFixed(0)} ns (${Math.min(...v).toFixed(0)} to ${Math.max(...v).toFixed(0)})`;
console.log(
  `evaluate with header lines ${f(withLines)}, without ${f(without)}; the lines ${f(diff)}, ${ROUNDS} rounds`,
);
