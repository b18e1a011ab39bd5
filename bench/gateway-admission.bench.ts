/**
 * The gateway's per-request limiting work in one process, before and after the routes of `LimitPlan.routeFor`
 * (D-G06): the configuration of bench/gateway.bench.ts (one tier with a minute and an hour bucket, one endpoint
 * rule, limits that never bind, `headers.mode: both`), 1,000 keys, path `/api/x`. Each pass builds the checks,
 * decides on the memory store, formats the headers and the metric labels:
 *
 * - before: the rule loop building a fresh check list and rule list per request (the former `checksFor`),
 *   `formatDecisionHeaders` of sluice/http (structured-headers serialization per request), a label object per
 *   request;
 * - after: `routeFor` (rule match, cached route per rule set), `route.checks`, `route.headers` (precomputed
 *   `RateLimit-Policy` pair, item prefixes and legacy constants), `route.labels`.
 *
 * Contenders interleaved (A B, then B A, ...), medians of the passes and the ratio. Run:
 *   npx tsx bench/gateway-admission.bench.ts [rounds=9]
 */

import { loadConfigText } from '../packages/gateway/src/config/load-config.js';
import { LimitPlan } from '../packages/gateway/src/limits/limit-plan.js';
import type { Check, Decision, Policy } from '../packages/sluice/src/core/index.js';
import { compilePathPattern, formatDecisionHeaders } from '../packages/sluice/src/http/index.js';
import { MemoryStore } from '../packages/sluice/src/memory/index.js';
import { BENCH_LIMITS_YAML } from './gateway/limits.js';
import { median, rate, ratio, table } from './lib/stats.js';

const rounds = Number(process.argv[2] ?? 9);
const N = 200_000;
const KEYS = Array.from({ length: 1000 }, (_, i) => `t:client-${i}`);
const NOW = 1_701_936_000_000;

const loaded = loadConfigText(BENCH_LIMITS_YAML, undefined, { env: {} });
if (!loaded.ok) throw new Error(JSON.stringify(loaded.violations));
const config = loaded.config;

let sink = 0;

function before(): () => void {
  const plan = new LimitPlan(config, new MemoryStore({ sweepIntervalMs: 0 }));
  // The former checksFor: tier policies, then every matching rule, a new list per request.
  const route = plan.routeFor('bench', 'GET', '/api/x');
  const minute = route.policies[0];
  const hour = route.policies[1];
  const rules = [
    { name: '/api/*', pattern: compilePathPattern('/api/*'), methods: undefined, policy: route.policies[2] },
  ];
  const checksFor = (path: string, key: string) => {
    const checks: Check[] = [];
    checks.push({ policy: minute, key });
    checks.push({ policy: hour, key });
    let names: string[] | undefined;
    for (const r of rules) {
      if (r.methods !== undefined) continue;
      if (!r.pattern.match(path)) continue;
      if (checks.some((c) => c.policy === (r.policy as Policy))) continue;
      checks.push({ policy: r.policy, key });
      if (names === undefined) names = [];
      names.push(r.name);
    }
    return { checks, rules: names ?? [] };
  };
  return () => {
    for (let i = 0; i < N; i++) {
      const { checks, rules: matched } = checksFor('/api/x', KEYS[i % 1000]);
      const d = plan.limiter.decide(checks, 1) as Decision;
      const labels = { tier: 'bench', rule: matched[0] ?? '', store: 'memory' };
      const h = formatDecisionHeaders(d, { mode: 'both', nowMs: NOW });
      sink += h.length + labels.rule.length;
    }
  };
}

function after(): () => void {
  const plan = new LimitPlan(config, new MemoryStore({ sweepIntervalMs: 0 }));
  return () => {
    for (let i = 0; i < N; i++) {
      const route = plan.routeFor('bench', 'GET', '/api/x');
      const d = plan.limiter.decide(route.checks(KEYS[i % 1000]), 1) as Decision;
      const labels = route.labels('memory');
      const h = route.headers(d, 'both', NOW);
      sink += h.length + (labels.rule?.length ?? 0);
    }
  };
}

const contenders = [
  { name: 'before: checks, formatDecisionHeaders, labels per request', run: before() },
  { name: 'after: cached route, precomputed header parts and labels', run: after() },
];
const times: number[][] = contenders.map(() => []);
for (const c of contenders) c.run(); // warm-up
for (let r = 0; r < rounds; r++) {
  const order = r % 2 === 0 ? [0, 1] : [1, 0];
  for (const i of order) {
    const t0 = performance.now();
    contenders[i].run();
    times[i].push(performance.now() - t0);
  }
}
const perSecond = times.map((t) => N / (median(t) / 1000));
console.log(`${N} requests per pass, ${rounds} interleaved passes, medians.\n`);
console.log(
  table(
    ['contender', 'requests/s (median)', 'µs per request', 'vs before'],
    contenders.map((c, i) => [
      c.name,
      rate(perSecond[i]),
      (1e6 / perSecond[i]).toFixed(2),
      ratio(perSecond[i], perSecond[0]),
    ]),
  ),
);
if (sink === 0) console.log('');
