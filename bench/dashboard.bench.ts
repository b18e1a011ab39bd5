/**
 * Dashboard benchmark: what the live dashboard adds to a gateway decision. The gateway records every decision in
 * its metrics sink; with the dashboard that sink is a `TappedMetrics` (Prometheus plus the per-second
 * `RateWindow` and `TopLimitedKeys`). Memory-store decisions over three policies (a tier's minute and hour
 * buckets and an endpoint rule, as the gateway checks them) for 1,000 keys, about a quarter denied: the engine
 * alone, with the Prometheus sink (the gateway without the dashboard), and with the tapped sink (the gateway
 * now). One process, contenders interleaved (A B C, then C B A, ...), medians and ratios.
 *
 * Run: npx tsx bench/dashboard.bench.ts [rounds=7]
 */
import { RateWindow } from '../packages/gateway/src/dashboard/rate-window.js';
import { TappedMetrics } from '../packages/gateway/src/metrics/tapped-metrics.js';
import { type Check, definePolicy, Limiter } from '../packages/sluice/src/core/index.js';
import { MemoryStore } from '../packages/sluice/src/memory/index.js';
import type { LimiterMetrics } from '../packages/sluice/src/metrics/index.js';
import { PrometheusMetrics } from '../packages/sluice/src/prometheus/index.js';
import { TopLimitedKeys } from '../packages/sluice/src/quota/index.js';
import { interleavedPasses } from './lib/passes.js';
import { median, rate, ratio, table } from './lib/stats.js';

const rounds = Number(process.argv[2] ?? 7);
const N = 200_000;
const labels = Object.freeze({ tier: 'standard', rule: '/api/*', store: 'memory' });

function setup(metrics: LimiterMetrics | undefined): (i: number) => void {
  // 3 tokens a minute, burst 3, 4 requests per key per 4,000 operations: about one in four is denied.
  const minute = definePolicy({ name: 'standard', quota: 3, window: 60, burst: 3 });
  const hour = definePolicy({ name: 'standard.hour', quota: 10_000, window: 3600, burst: 10_000 });
  const rule = definePolicy({ name: '/api/*', quota: 30, window: 60, burst: 30 });
  const limiter = new Limiter({
    policies: [minute, hour, rule],
    store: new MemoryStore({ sweepIntervalMs: 0 }),
  });
  const checks: Check[][] = Array.from({ length: 1000 }, (_, k) => [
    { policy: minute, key: `ip:10.0.${k >> 8}.${k & 255}` },
    { policy: hour, key: `ip:10.0.${k >> 8}.${k & 255}` },
    { policy: rule, key: `ip:10.0.${k >> 8}.${k & 255}` },
  ]);
  return (i) => {
    const d = limiter.decide(checks[i % 1000], 1) as ReturnType<MemoryStore['decide']>;
    metrics?.recordDecision(d, labels);
  };
}

const contenders = [
  { name: 'engine alone (3 policies)', setup: () => setup(undefined) },
  {
    name: 'engine + sluice/prometheus (gateway without dashboard)',
    setup: () => setup(new PrometheusMetrics()),
  },
  {
    name: 'engine + TappedMetrics: Prometheus, RateWindow, TopLimitedKeys (gateway now)',
    setup: () => setup(new TappedMetrics([new RateWindow(), new TopLimitedKeys({ periodMs: 300_000 })])),
  },
];

const results = interleavedPasses(contenders, rounds, N);

const base = median(results.get(contenders[0].name)!);
const prom = median(results.get(contenders[1].name)!);
console.log(
  `### Dashboard recording: decisions per second (median of ${rounds} interleaved passes of ${N})\n`,
);
console.log(
  table(
    ['contender', 'decisions/s', 'vs engine alone', 'vs Prometheus sink'],
    contenders.map((c) => {
      const m = median(results.get(c.name)!);
      return [c.name, rate(m), ratio(m, base), ratio(m, prom)];
    }),
  ),
);
