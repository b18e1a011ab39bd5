/**
 * Metrics benchmark: what recording costs per decision. Memory-store decisions over 1,000 keys (a quarter of them
 * denied), alone and with each way of recording them: Sluice's Prometheus sink (cached cells, collected at scrape),
 * the usual middleware pattern of prom-client `counter.inc(labels)` plus `histogram.observe(labels, v)` per request,
 * and Sluice's OpenTelemetry sink over the OpenTelemetry SDK. Also the cost of `QuotaTracker.record`. One process,
 * contenders interleaved (A B C D, then D C B A, ...), medians of the passes and ratios to the bare engine.
 *
 * Run: npx tsx bench/metrics.bench.ts [rounds=7]
 */
import { MeterProvider, MetricReader } from '@opentelemetry/sdk-metrics';
import { Counter, Histogram, Registry } from 'prom-client';
import { type Decision, Limiter } from '../packages/sluice/src/core/index.js';
import { MemoryStore } from '../packages/sluice/src/memory/index.js';
import { OtelMetrics } from '../packages/sluice/src/otel/index.js';
import { PrometheusMetrics } from '../packages/sluice/src/prometheus/index.js';
import { QuotaTracker } from '../packages/sluice/src/quota/index.js';
import { interleavedPasses, type PassContender } from './lib/passes.js';
import { median, rate, ratio, table } from './lib/stats.js';

const rounds = Number(process.argv[2] ?? 7);
const N = 400_000;
const KEYS = Array.from({ length: 1000 }, (_, i) => `user:${i}`);

class Reader extends MetricReader {
  protected override async onShutdown(): Promise<void> {}
  protected override async onForceFlush(): Promise<void> {}
}

function limiter(): Limiter {
  // 3 tokens a minute, burst 3, 4 requests per key per pass: about one in four is denied.
  return new Limiter({
    policies: [{ name: 'rl.write', quota: 3, window: 60, burst: 3 }],
    store: new MemoryStore({ sweepIntervalMs: 0 }),
  });
}

const labels = Object.freeze({ tier: 'standard', rule: '/api/*', store: 'memory' });

const contenders: PassContender[] = [
  {
    name: 'engine alone',
    setup: () => {
      const l = limiter();
      const c = l.resolve([{ policy: 'rl.write', key: 'x' }])[0].policy;
      return (i) => {
        l.check(c, KEYS[i % 1000]);
      };
    },
  },
  {
    name: 'engine + latency timing only',
    setup: () => {
      const l = limiter();
      const c = l.policy('rl.write');
      const sink = { total: 0 };
      return (i) => {
        const t = performance.now();
        const d = l.check(c, KEYS[i % 1000]) as Decision;
        sink.total += d.allowed ? performance.now() - t : 0;
      };
    },
  },
  {
    name: 'engine + sluice/prometheus',
    setup: () => {
      const l = limiter();
      const m = new PrometheusMetrics();
      const c = l.policy('rl.write');
      return (i) => {
        const t = performance.now();
        const d = l.check(c, KEYS[i % 1000]) as Decision;
        m.recordDecision(d, labels, (performance.now() - t) / 1000);
      };
    },
  },
  {
    name: 'engine + prom-client inc(labels)',
    setup: () => {
      const l = limiter();
      const registry = new Registry();
      const decisions = new Counter({
        name: 'x_decisions_total',
        help: 'x',
        labelNames: ['policy', 'tier', 'rule', 'outcome'],
        registers: [registry],
      });
      const latency = new Histogram({
        name: 'x_decision_duration_seconds',
        help: 'x',
        labelNames: ['store'],
        registers: [registry],
      });
      const c = l.policy('rl.write');
      return (i) => {
        const t = performance.now();
        const d = l.check(c, KEYS[i % 1000]) as Decision;
        decisions.inc({
          policy: 'rl.write',
          tier: 'standard',
          rule: '/api/*',
          outcome: d.allowed ? 'allowed' : 'limited',
        });
        latency.observe({ store: 'memory' }, (performance.now() - t) / 1000);
      };
    },
  },
  {
    name: 'engine + sluice/otel (OTel SDK)',
    setup: () => {
      const l = limiter();
      const provider = new MeterProvider({ readers: [new Reader()] });
      const m = new OtelMetrics({ meter: provider.getMeter('bench') });
      const c = l.policy('rl.write');
      return (i) => {
        const t = performance.now();
        const d = l.check(c, KEYS[i % 1000]) as Decision;
        m.recordDecision(d, labels, (performance.now() - t) / 1000);
      };
    },
  },
  {
    name: 'QuotaTracker.record (memory)',
    setup: () => {
      const q = new QuotaTracker({ flushIntervalMs: 0 });
      const tenants = Array.from({ length: 100 }, (_, i) => `tenant-${i}`);
      return (i) => {
        q.record(tenants[i % 100], 'read');
      };
    },
  },
];

const results = interleavedPasses(contenders, rounds, N);

const base = median(results.get('engine alone')!);
console.log(`### Metrics: operations per second (median of ${rounds} interleaved passes of ${N})\n`);
console.log(
  table(
    ['contender', 'ops/s', 'vs engine alone'],
    contenders.map((c) => {
      const m = median(results.get(c.name)!);
      return [c.name, rate(m), ratio(m, base)];
    }),
  ),
);
