import { join } from 'node:path';
import { MemoryStore } from 'sluice/memory';
import { afterAll, describe, expect, it } from 'vitest';
import { loadConfigText } from '../src/config/load-config.js';
import type { Violation } from '../src/config/violation.js';
import { GatewayLimits } from '../src/limits/gateway-limits.js';
import { tempDir } from './support.js';

const tmp = tempDir();
afterAll(() => tmp.cleanup());

function load(yaml: string) {
  return loadConfigText(yaml, join(tmp.dir, 'c.yaml'), { env: {} });
}

function violations(yaml: string): string[] {
  const r = load(yaml);
  expect(r.ok).toBe(false);
  return [...(r as { violations: readonly Violation[] }).violations].map(
    (x) => `${x.line}:${x.column} ${x.path}: ${x.message}`,
  );
}

const GOOD = `rateLimiting:
  defaultTier: free
  concurrencyRetryAfter: 2s
  tiers:
    free: { requestsPerMinute: 60, concurrentRequests: 20 }
  endpoints:
    - pattern: /api/reports/*
      concurrent: 2
`;

describe('concurrency limits in the configuration', () => {
  it('gives a tier a concurrency policy beside its minute bucket, and an endpoint rule one of its own', () => {
    const r = load(GOOD);
    if (!r.ok) throw new Error(JSON.stringify(r.violations));
    const limits = new GatewayLimits(r.config, new MemoryStore({ sweepIntervalMs: 0 }));
    const byName = new Map(limits.limiter.policies.map((p) => [p.name, p]));
    expect(byName.get('free.concurrent')).toMatchObject({ concurrent: 20, retryAfterHint: 2 });
    expect(byName.get('/api/reports/*')).toMatchObject({ concurrent: 2, retryAfterHint: 2 });
    expect(byName.get('free')).toMatchObject({ concurrent: 0, quota: 60, window: 60 });
    const tierRule = limits.options.rules?.find((x) => x.name === 'tier:free');
    expect(tierRule?.policies).toEqual(['free', 'free.concurrent']);
    // A reload with the same limits keeps the policy objects, so slots held across it are given back to them.
    const again = new GatewayLimits(r.config, new MemoryStore({ sweepIntervalMs: 0 }), limits);
    expect(again.limiter.policies.find((p) => p.name === 'free.concurrent')).toBe(
      byName.get('free.concurrent'),
    );
  });

  it('refuses a concurrency unit on a rule with a window, at its line', () => {
    expect(
      violations(`rateLimiting:
  defaultTier: free
  tiers:
    free: { requestsPerMinute: 60 }
  endpoints:
    - pattern: /api/reports/*
      concurrent: 2
      window: 60s
`),
    ).toEqual([
      '8:7 rateLimiting.endpoints[0].window: "window" cannot be combined with "concurrent": a count of requests in flight has no window; give the rate limit a rule of its own',
    ]);
  });

  it('takes concurrency limits on the Redis store, with store.leaseTime (default 5s)', () => {
    const redis = `${GOOD}store:\n  type: redis\n  url: redis://127.0.0.1:6379\n`;
    const r = load(redis);
    if (!r.ok) throw new Error(JSON.stringify(r.violations));
    expect(r.config.store.leaseTimeMs).toBe(5_000);
    const leased = load(`${redis}  leaseTime: 2s\n`);
    if (!leased.ok) throw new Error(JSON.stringify(leased.violations));
    expect(leased.config.store.leaseTimeMs).toBe(2_000);
  });

  it('refuses store.leaseTime on the memory store, at its key', () => {
    expect(violations(`${GOOD}store:\n  type: memory\n  leaseTime: 2s\n`)).toEqual([
      '11:3 store.leaseTime: applies only to store type "redis"',
    ]);
  });

  it.each(['500ms', '2h'])('refuses store.leaseTime: %s (1s to 1h)', (value) => {
    expect(
      violations(`${GOOD}store:\n  type: redis\n  url: redis://127.0.0.1:6379\n  leaseTime: ${value}\n`),
    ).toEqual([`12:14 store.leaseTime: must be between 1s and 3600s, got "${value}"`]);
  });

  it('refuses zero or negative slots, and concurrentRequests on an unlimited tier', () => {
    const zero = violations(GOOD.replace('concurrent: 2', 'concurrent: 0'));
    expect(zero.join('\n')).toMatch(/^8:19 rateLimiting\.endpoints\[0\]\.concurrent: /);
    const negative = violations(GOOD.replace('concurrentRequests: 20', 'concurrentRequests: -1'));
    expect(negative.join('\n')).toMatch(/^5:56 rateLimiting\.tiers\.free\.concurrentRequests: /);
    expect(
      violations(`rateLimiting:
  defaultTier: free
  tiers:
    free: { unlimited: true, concurrentRequests: 5 }
`),
    ).toEqual([
      '4:50 rateLimiting.tiers.free.concurrentRequests: an unlimited tier is exempt from every limit, concurrency included: remove concurrentRequests or unlimited',
    ]);
  });
});

const TIERS = `rateLimiting:
  defaultTier: free
  tiers:
    free: { requestsPerMinute: 60, priority: sheddable }
`;

describe('load shedding in the configuration', () => {
  it('resolves a fixed and an adaptive limit, with defaults', () => {
    const fixed = load(`${TIERS}overload:\n  maxInFlight: 200\n`);
    if (!fixed.ok) throw new Error(JSON.stringify(fixed.violations));
    expect(fixed.config.overload).toEqual({
      maxInFlight: 200,
      adaptive: undefined,
      reserve: 0.2,
      retryAfterSeconds: 1,
    });
    expect(fixed.config.tiers.free.priority).toBe('sheddable');
    const adaptive = load(`${TIERS}overload:\n  adaptive: { max: 400 }\n  reserve: 0.1\n  retryAfter: 2s\n`);
    if (!adaptive.ok) throw new Error(JSON.stringify(adaptive.violations));
    expect(adaptive.config.overload).toMatchObject({
      maxInFlight: undefined,
      adaptive: { min: 5, max: 400, initial: 20, smoothing: 0.2, tolerance: 1.1 },
      reserve: 0.1,
      retryAfterSeconds: 2,
    });
  });

  it('refuses zero or negative limits, a reserve of 1 or more, an unknown priority and min above max, at their lines', () => {
    expect(violations(`${TIERS}overload:\n  maxInFlight: 0\n`).join('\n')).toMatch(
      /^6:16 overload\.maxInFlight: /,
    );
    expect(violations(`${TIERS}overload:\n  maxInFlight: -5\n`).join('\n')).toMatch(
      /^6:16 overload\.maxInFlight: /,
    );
    expect(violations(`${TIERS}overload:\n  maxInFlight: 10\n  reserve: 1\n`).join('\n')).toMatch(
      /^7:12 overload\.reserve: /,
    );
    const priority = violations(TIERS.replace('priority: sheddable', 'priority: shedable'));
    expect(priority.join('\n')).toMatch(/^4:46 rateLimiting\.tiers\.free\.priority: .*sheddable/);
    expect(violations(`${TIERS}overload:\n  adaptive: { min: 50, max: 10 }\n`)).toEqual([
      '6:20 overload.adaptive.min: min (50) must not be above max (10)',
    ]);
    expect(violations(`${TIERS}overload:\n  maxInFlight: 10\n  adaptive: {}\n`)).toEqual([
      '7:3 overload.adaptive: a limit is either fixed (maxInFlight) or adaptive: remove one of them',
    ]);
  });

  it('refuses a bad concurrencyRetryAfter once, whatever the number of concurrency policies', () => {
    expect(violations(GOOD.replace('concurrencyRetryAfter: 2s', 'concurrencyRetryAfter: 1500ms'))).toEqual([
      '3:26 rateLimiting.concurrencyRetryAfter: must be whole seconds from 1s to 1d, got "1500ms"',
    ]);
  });
});

describe('a policy class counting requests in flight', () => {
  const CLASS = `rateLimiting:
  defaultTier: free
  tiers:
    free: { requestsPerMinute: 60 }
  endpoints:
    - { pattern: /api/reports/*, class: rl.reports }
    - { pattern: /api/exports/*, class: rl.reports }
ratelimit:
  rl.reports: { concurrent: 2, key: principal }
`;

  it('gives the endpoint rules naming it one concurrency policy, keyed by the class', () => {
    const r = load(CLASS);
    if (!r.ok) throw new Error(JSON.stringify(r.violations));
    const limits = new GatewayLimits(r.config, new MemoryStore({ sweepIntervalMs: 0 }));
    expect(limits.limiter.policies.find((p) => p.name === 'rl.reports')).toMatchObject({ concurrent: 2 });
    const rules = limits.options.rules?.filter((x) => x.name === 'rl.reports') ?? [];
    expect(rules.map((x) => [x.path, x.policies, x.key])).toEqual([
      ['/api/reports/*', ['rl.reports'], 'principal'],
      ['/api/exports/*', ['rl.reports'], 'principal'],
    ]);
  });

  it('refuses a rate key beside concurrent, and the class as the public-auth class, at their lines', () => {
    expect(violations(CLASS.replace('concurrent: 2,', 'concurrent: 2, burst: 5,'))).toEqual([
      '9:39 ratelimit["rl.reports"].burst: "burst" cannot be combined with "concurrent": a count of requests in flight has no rate; name a class of its own for the rate',
    ]);
    expect(violations(`${CLASS}identity:\n  publicAuthClass: rl.reports\n`)).toEqual([
      '11:20 identity.publicAuthClass: class "rl.reports" counts requests in flight: failed credentials need a rate class',
    ]);
  });
});
