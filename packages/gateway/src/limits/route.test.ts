import fc from 'fast-check';
import { type Decision, definePolicy, Limiter, ManualClock } from 'sluice';
import { formatDecisionHeaders, type HeaderMode } from 'sluice/http';
import { MemoryStore } from 'sluice/memory';
import { describe, expect, it } from 'vitest';
import { loadConfigText } from '../config/load-config.js';
import { LimitPlan } from './limit-plan.js';
import { LegacyParts, Route } from './route.js';

const MODES: HeaderMode[] = ['draft-11', 'legacy', 'both', 'none'];

describe('Route.headers', () => {
  it('equals formatDecisionHeaders for every decision, mode and time (property)', () => {
    fc.assert(
      fc.property(
        fc.array(
          fc.record({
            quota: fc.integer({ min: 1, max: 50 }),
            window: fc.constantFrom(1, 60, 3600),
            burst: fc.integer({ min: 1, max: 20 }),
            shadow: fc.boolean(),
            name: fc.constantFrom('standard', 'standard.hour', '/api/*', 'say "x"', 'rl.write'),
          }),
          { minLength: 1, maxLength: 4 },
        ),
        fc.array(fc.tuple(fc.integer({ min: 1, max: 5 }), fc.integer({ min: 0, max: 120_000 })), {
          minLength: 1,
          maxLength: 15,
        }),
        fc.constantFrom(...MODES),
        fc.integer({ min: 0, max: 2 ** 41 }),
        (specs, steps, mode, nowMs) => {
          const policies = specs.map((s, i) =>
            definePolicy({
              name: `${s.name}#${i}`,
              quota: s.quota,
              window: s.window,
              burst: s.burst,
              shadow: s.shadow,
            }),
          );
          const clock = new ManualClock(0);
          const store = new MemoryStore({ clock, sweepIntervalMs: 0 });
          const limiter = new Limiter({ policies, store });
          const route = new Route('standard', policies, [], new LegacyParts(policies));
          const checks = route.checks('k');
          for (const [cost, advance] of steps) {
            clock.advance(advance);
            const d = limiter.decide(checks, cost) as Decision;
            expect(route.headers(d, mode, nowMs)).toEqual(formatDecisionHeaders(d, { mode, nowMs }));
          }
          store.close();
        },
      ),
      { numRuns: 200 },
    );
  });

  it('falls back to the general formatter for a decision over other policies', () => {
    const a = definePolicy({ name: 'a', quota: 2, window: 60 });
    const b = definePolicy({ name: 'b', quota: 3, window: 60 });
    const store = new MemoryStore({ clock: new ManualClock(0), sweepIntervalMs: 0 });
    const limiter = new Limiter({ policies: [a, b], store });
    const route = new Route('t', [a], [], new LegacyParts([a, b]));
    const d = limiter.decide([{ policy: b, key: 'k' }], 1) as Decision;
    expect(route.headers(d, 'both', 5000)).toEqual(formatDecisionHeaders(d, { mode: 'both', nowMs: 5000 }));
    store.close();
  });
});

describe('LimitPlan.routeFor', () => {
  const loaded = loadConfigText(
    `rateLimiting:
  defaultTier: standard
  tiers:
    standard: { requestsPerMinute: 300, requestsPerHour: 10000, burstLimit: 50 }
    free: { requestsPerMinute: 60 }
  endpoints:
    - pattern: "/api/risk/simulation/*"
      limit: 30
      window: 60s
    - pattern: "/api/risk/simulation/studio/*"
      limit: 10
      window: 60s
    - { pattern: "/w/*", methods: [POST], limit: 5, window: 60s }
`,
    undefined,
    { env: {} },
  );
  if (!loaded.ok) throw new Error(JSON.stringify(loaded.violations));
  const store = new MemoryStore({ sweepIntervalMs: 0 });
  const plan = new LimitPlan(loaded.config, store);

  it('reuses one route per tier and set of matching rules, and matches like checksFor always did', () => {
    const r1 = plan.routeFor('standard', 'GET', '/api/risk/simulation/studio/a');
    const r2 = plan.routeFor('standard', 'GET', '/api/risk/simulation/studio/b');
    expect(r2).toBe(r1);
    expect(r1.policies.map((p) => p.name)).toEqual([
      'standard',
      'standard.hour',
      '/api/risk/simulation/*',
      '/api/risk/simulation/studio/*',
    ]);
    expect(r1.rules).toEqual(['/api/risk/simulation/*', '/api/risk/simulation/studio/*']);
    const plain = plan.routeFor('standard', 'GET', '/api/risk/simulation/run');
    expect(plain.policies.map((p) => p.name)).toEqual([
      'standard',
      'standard.hour',
      '/api/risk/simulation/*',
    ]);
    expect(plan.routeFor('free', 'GET', '/x').policies.map((p) => p.name)).toEqual(['free']);
    expect(plan.routeFor('free', 'GET', '/w/1').rules).toEqual([]);
    expect(plan.routeFor('free', 'POST', '/w/1').rules).toEqual(['/w/*']);
    expect(plan.routeFor('free', 'GET', '/w/1')).not.toBe(plan.routeFor('standard', 'GET', '/w/1'));
    const { checks, rules } = plan.checksFor(
      'standard',
      'GET',
      '/api/risk/simulation/studio/a',
      'ip:1.2.3.4',
    );
    expect(checks.map((c) => [c.policy, c.key])).toEqual(r1.policies.map((p) => [p, 'ip:1.2.3.4']));
    expect(rules).toBe(r1.rules);
  });

  it('labels decisions with the tier, the first matching rule and the store', () => {
    const r = plan.routeFor('standard', 'GET', '/api/risk/simulation/studio/a');
    expect(r.labels('memory')).toEqual({ tier: 'standard', rule: '/api/risk/simulation/*', store: 'memory' });
    expect(r.labels('memory')).toBe(r.labels('memory'));
    expect(plan.routeFor('free', 'GET', '/x').labels('redis')).toEqual({
      tier: 'free',
      rule: '',
      store: 'redis',
    });
  });
});
