/**
 * What run-time overrides cost a decision of the HTTP limiter on the memory store: no `overrides` option (the
 * baseline), an override store holding no rule, 10,000 rules none of which matches the request (5,000 exact
 * keys and 5,000 tenant and prefix patterns, so the prefix trie is walked), and 10,000 rules one of which
 * overrides each request's key. 1,000 callers in turn, one rule and one policy per request. One process,
 * contenders interleaved; the figure is the median over rounds of each contender's time per decision minus the
 * baseline's in the same round, with the spread of those differences.
 *
 * The lookup alone is also timed with the caller's tenant (the 10,000 rules hold 2,500 on whole tenants, so the
 * index looks the tenant up too), against the same lookup without it, and in 10,000 rules on single IPv4 addresses
 * (blocks of other clients, as penalty blocks are), which are found by the client IP whatever the key.
 *
 * Run: npx tsx bench/overrides.bench.ts [rounds=7]
 */
import {
  Limiter,
  type OverrideRule,
  type OverrideStore,
  parseOverride,
} from '../packages/sluice/src/core/index.js';
import { createHttpLimiter, type HttpRequestInfo } from '../packages/sluice/src/http/index.js';
import { OverrideIndex } from '../packages/sluice/src/http/override-index.js';
import { MemoryOverrides, MemoryStore } from '../packages/sluice/src/memory/index.js';
import { benchPattern, fixedOverrideStore } from './lib/fixed-overrides.js';
import { interleavedPasses, type PassContender } from './lib/passes.js';
import { median, rate, table } from './lib/stats.js';

const rounds = Number(process.argv[2] ?? 7);
const N = 300_000;
const NOW = Date.now();
const CALLERS = 1000;
const requests: HttpRequestInfo[] = Array.from({ length: CALLERS }, (_, i) => ({
  method: 'GET',
  path: '/items',
  headers: {},
  remoteAddress: `10.0.${i >> 8}.${i & 255}`,
  identity: { tenant: `t${i}`, client: 'web', tier: 'gold' },
}));

/** A store holding a fixed list of `rules` rules, the callers' own among them when `matching`. */
function store(rules: number, matching: boolean): OverrideStore {
  if (rules === 0) return new MemoryOverrides();
  const list: OverrideRule[] = Array.from({ length: rules }, (_, i) =>
    parseOverride(
      { pattern: benchPattern(i, matching, CALLERS), quota: 6000, window: 60, reason: 'bench' },
      NOW,
      'bench',
    ),
  );
  return fixedOverrideStore(list) as OverrideStore;
}

function limiterWith(overrides: OverrideStore | undefined) {
  const limiter = new Limiter({
    policies: [{ name: 'rl.read', quota: 6000, window: 60, burst: 6000 }],
    store: new MemoryStore({ sweepIntervalMs: 0 }),
  });
  return createHttpLimiter({
    limiter,
    rules: [{ name: 'all', policies: ['rl.read'], key: 'caller' }],
    ...(overrides === undefined ? {} : { overrides }),
  });
}

const setups: [string, OverrideStore | undefined][] = [
  ['no overrides option', undefined],
  ['override store, no rule', store(0, false)],
  ['10,000 rules, none matching', store(10_000, false)],
  ['10,000 rules, key overridden', store(10_000, true)],
];
const contenders: PassContender[] = setups.map(([name, o]) => ({
  name,
  setup: () => {
    const http = limiterWith(o);
    return (i) => void http.evaluate(requests[i % CALLERS]);
  },
}));

// The lookup alone, on the same 1,000 callers: the key string is built per call as the limiter builds it, so the
// baseline pays that too and the difference is the index's own cost.
const index = new OverrideIndex((setups[2][1] as OverrideStore).snapshot().rules);
const clock = () => NOW;
// Tenants as an identity holds them: strings made once, not per request.
const tenants = requests.map((r) => r.identity?.tenant as string);
// 10,000 blocks of single IPv4 addresses, none of them a caller's; the callers' addresses, as resolved once.
const addressIndex = new OverrideIndex(
  Array.from({ length: 10_000 }, (_, i) =>
    parseOverride({ pattern: `ip:198.18.${i >> 8}.${i & 255}`, block: 403, reason: 'bench' }, NOW, 'bench'),
  ),
);
const addresses = requests.map((r) => r.remoteAddress as string);
const lookups: PassContender[] = [
  {
    name: 'key built, no lookup',
    setup: () => (i) => void `tenant:t${i % CALLERS}:client:web`.length,
  },
  {
    name: 'key built, looked up in 10,000 rules',
    setup: () => (i) =>
      void index.find(`tenant:t${i % CALLERS}:client:web`, 'rl.read', 'gold', '10.0.0.1', clock),
  },
  {
    name: 'key built, looked up with its tenant',
    setup: () => (i) =>
      void index.find(
        `tenant:t${i % CALLERS}:client:web`,
        'rl.read',
        'gold',
        '10.0.0.1',
        clock,
        tenants[i % CALLERS],
      ),
  },
  {
    name: 'key built, looked up in 10,000 address rules',
    setup: () => (i) =>
      void addressIndex.find(
        `tenant:t${i % CALLERS}:client:web`,
        'rl.read',
        'gold',
        addresses[i % CALLERS],
        clock,
      ),
  },
];

const results = interleavedPasses(contenders, rounds, N);
const lookupResults = interleavedPasses(lookups, rounds, N * 10);
const base = results.get('no overrides option') ?? [];
const rows = setups.map(([name]) => {
  const r = results.get(name) ?? [];
  const diffs = r.map((x, i) => 1e9 / x - 1e9 / base[i]);
  const ratios = r.map((x, i) => base[i] / x);
  return [
    name,
    `${rate(median(r))}/s`,
    `${median(ratios).toFixed(3)}x`,
    `${median(diffs).toFixed(0)} ns`,
    `${Math.min(...diffs).toFixed(0)} to ${Math.max(...diffs).toFixed(0)} ns`,
  ];
});
console.log(`Node ${process.version}, one thread, ${rounds} rounds of ${N} decisions, ${CALLERS} callers.\n`);
console.log(
  table(
    ['contender', 'decisions', 'time / baseline (median)', 'extra per decision (median)', 'spread'],
    rows,
  ),
);
const plain = lookupResults.get('key built, no lookup') ?? [];
const looked = lookupResults.get('key built, looked up in 10,000 rules') ?? [];
const extra = looked.map((x, i) => 1e9 / x - 1e9 / plain[i]);
console.log(
  `\nThe index lookup alone (${rounds} rounds of ${N * 10} calls, none of the 10,000 rules matching):\n`,
);
console.log(
  table(
    ['extra per lookup (median)', 'spread'],
    [
      [
        `${median(extra).toFixed(0)} ns`,
        `${Math.min(...extra).toFixed(0)} to ${Math.max(...extra).toFixed(0)} ns`,
      ],
    ],
  ),
);
const withTenant = lookupResults.get('key built, looked up with its tenant') ?? [];
const tenantExtra = withTenant.map((x, i) => 1e9 / x - 1e9 / looked[i]);
console.log("\nThe same lookup given the caller's tenant, minus the lookup without it:\n");
console.log(
  table(
    ['extra per lookup (median)', 'spread'],
    [
      [
        `${median(tenantExtra).toFixed(0)} ns`,
        `${Math.min(...tenantExtra).toFixed(0)} to ${Math.max(...tenantExtra).toFixed(0)} ns`,
      ],
    ],
  ),
);
const byAddress = lookupResults.get('key built, looked up in 10,000 address rules') ?? [];
const addressExtra = byAddress.map((x, i) => 1e9 / x - 1e9 / plain[i]);
console.log("\nThe lookup in 10,000 rules on single IPv4 addresses (none the caller's), minus no lookup:\n");
console.log(
  table(
    ['extra per lookup (median)', 'spread'],
    [
      [
        `${median(addressExtra).toFixed(0)} ns`,
        `${Math.min(...addressExtra).toFixed(0)} to ${Math.max(...addressExtra).toFixed(0)} ns`,
      ],
    ],
  ),
);
