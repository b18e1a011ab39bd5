/**
 * Two source trees side by side in one process: `HttpLimiter.evaluate` on the memory store under 10,000 override
 * rules (2,500 of them on whole tenants, so a tree that matches by the caller's tenant looks it up), none matching
 * or one matching each caller's key, against no overrides, 1,000 callers in turn. Every contender of both trees is
 * timed in each round (A B C..., then reversed), so load on a shared machine falls on both alike; the figures are
 * medians over rounds of this tree's time over the other tree's, with their spread.
 *
 * Run: npx tsx bench/overrides-tenant.bench.ts <other tree, e.g. a worktree of the commit before> [rounds=9]
 */
import { resolve } from 'node:path';
import { benchPattern, fixedOverrideStore } from './lib/fixed-overrides.js';
import { interleavedPasses, type PassContender } from './lib/passes.js';
import { median, table } from './lib/stats.js';

const other = resolve(process.argv[2] ?? '.');
const rounds = Number(process.argv[3] ?? 9);
const N = 200_000;
const CALLERS = 1000;
const here = resolve(import.meta.dirname, '..');

interface Tree {
  core: typeof import('../packages/sluice/src/core/index.js');
  http: typeof import('../packages/sluice/src/http/index.js');
  memory: typeof import('../packages/sluice/src/memory/index.js');
}

async function load(root: string): Promise<Tree> {
  const src = (p: string) => `${root}/packages/sluice/src/${p}/index.ts`;
  return {
    core: await import(src('core')),
    http: await import(src('http')),
    memory: await import(src('memory')),
  };
}

const requests = Array.from({ length: CALLERS }, (_, i) => ({
  method: 'GET',
  path: '/items',
  headers: {},
  remoteAddress: `10.0.${i >> 8}.${i & 255}`,
  identity: { tenant: `t${i}`, client: 'web', tier: 'gold' },
}));

function contenders(label: string, t: Tree): PassContender[] {
  const now = Date.now();
  const store = (matching: boolean) =>
    fixedOverrideStore(
      Array.from({ length: 10_000 }, (_, i) =>
        t.core.parseOverride(
          { pattern: benchPattern(i, matching, CALLERS), quota: 6000, window: 60, reason: 'bench' },
          now,
          'bench',
        ),
      ),
    );
  const limiter = (overrides: unknown) =>
    t.http.createHttpLimiter({
      limiter: new t.core.Limiter({
        policies: [{ name: 'rl.read', quota: 6000, window: 60, burst: 6000 }],
        store: new t.memory.MemoryStore({ sweepIntervalMs: 0 }),
      }),
      rules: [{ name: 'all', policies: ['rl.read'], key: 'caller' }],
      ...(overrides === undefined ? {} : { overrides: overrides as never }),
    });
  const cases: [string, unknown][] = [
    ['no overrides', undefined],
    ['none matching', store(false)],
    ['key overridden', store(true)],
  ];
  return cases.map(([name, o]) => ({
    name: `${label}: ${name}`,
    setup: () => {
      const http = limiter(o);
      return (i) => void http.evaluate(requests[i % CALLERS]);
    },
  }));
}

const [a, b] = [await load(other), await load(here)];
const results = interleavedPasses([...contenders('other', a), ...contenders('this', b)], rounds, N);
const x0 = results.get('other: no overrides') ?? [];
const y0 = results.get('this: no overrides') ?? [];
const spread = (r: number[]) => `${Math.min(...r).toFixed(3)} to ${Math.max(...r).toFixed(3)}`;
const rows = ['no overrides', 'none matching', 'key overridden'].map((name) => {
  const x = results.get(`other: ${name}`) ?? [];
  const y = results.get(`this: ${name}`) ?? [];
  const ratios = y.map((v, i) => x[i] / v);
  // Each tree's time over its own no-overrides time in the same round, then this tree's over the other's.
  const own = y.map((v, i) => y0[i] / v / (x0[i] / x[i]));
  return [name, `${median(ratios).toFixed(3)}x`, spread(ratios), `${median(own).toFixed(3)}x`, spread(own)];
});
console.log(`Node ${process.version}, ${rounds} rounds of ${N} decisions; other tree: ${other}\n`);
console.log(
  table(
    ['case', 'time, this / other (median)', 'spread', 'over own baseline, this / other (median)', 'spread'],
    rows,
  ),
);
