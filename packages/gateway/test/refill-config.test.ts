import { join } from 'node:path';
import { ManualClock } from 'sluice';
import { MemoryStore } from 'sluice/memory';
import { afterAll, describe, expect, it } from 'vitest';
import { requirementFixture } from '../../../test/support/requirements.js';
import type { GatewayConfig } from '../src/config/gateway-config.js';
import { loadConfigText } from '../src/config/load-config.js';
import type { Violation } from '../src/config/violation.js';
import { GatewayLimits } from '../src/limits/gateway-limits.js';
import { tempDir } from './support.js';

const tmp = tempDir();
afterAll(() => tmp.cleanup());

const BASE = `rateLimiting:
  defaultTier: standard
  tiers:
    standard: { requestsPerMinute: 300, requestsPerHour: 10000, burstLimit: 50 }
`;

function load(yaml: string): GatewayConfig {
  const r = loadConfigText(yaml, join(tmp.dir, 'c.yaml'), { env: {} });
  if (!r.ok) throw new Error(JSON.stringify(r.violations));
  return r.config;
}

function violations(yaml: string): Violation[] {
  const r = loadConfigText(yaml, join(tmp.dir, 'c.yaml'), { env: {} });
  expect(r.ok).toBe(false);
  return [...r.violations];
}

const lines = (v: Violation[]) => v.map((x) => `${x.line}:${x.column} ${x.path}: ${x.message}`);

describe('stepped refill of a policy class', () => {
  it('takes ratelimit.<class>.refill instead of per_minute, and endpoint rules naming the class get it', () => {
    const c = load(`${BASE}  endpoints:
    - { pattern: /api/policy/*, class: rl.policy }
ratelimit:
  rl.policy: { refill: { tokens: 5, every: 10 }, burst: 50 }
`);
    expect(c.classes['rl.policy']).toEqual({
      name: 'rl.policy',
      perMinute: 30,
      burst: 50,
      refill: { tokens: 5, every: 10 },
      key: 'caller',
      scope: 'request',
    });
    const rule = c.endpoints[0];
    expect([rule.name, rule.limit, rule.windowSeconds, rule.burst]).toEqual(['rl.policy', 5, 10, 50]);
    expect(rule.refill).toEqual({ tokens: 5, every: 10 });
  });

  it('accepts per_minute next to refill when it states the same rate, and refuses another', () => {
    expect(
      load(`${BASE}ratelimit:
  rl.policy: { per_minute: 30, refill: { tokens: 5, every: 10 }, burst: 50 }
`).classes['rl.policy'].perMinute,
    ).toBe(30);
    expect(
      lines(
        violations(`${BASE}ratelimit:
  rl.policy:
    per_minute: 60
    refill: { tokens: 5, every: 10 }
    burst: 50
`),
      ),
    ).toEqual([
      '7:17 ratelimit["rl.policy"].per_minute: must equal refill.tokens x 60 / refill.every (5 x 60 / 10 = 30) or be left out, got 60',
    ]);
  });

  it('requires per_minute or refill, and only burst from the schema', () => {
    expect(
      lines(
        violations(`${BASE}ratelimit:
  rl.policy: { burst: 50 }
`),
      ),
    ).toEqual([
      '6:14 ratelimit["rl.policy"]: missing required key "per_minute" (or give "refill: { tokens, every }")',
    ]);
    expect(violations(`${BASE}ratelimit:\n  rl.policy: { per_minute: 30 }\n`).map((x) => x.message)).toEqual([
      'missing required key "burst"',
    ]);
  });

  it('passes the class refill to the public-auth bucket', () => {
    const c = load(`${BASE}ratelimit:
  rl.public_auth: { refill: { tokens: 1, every: 6 }, burst: 3 }
`);
    const limits = new GatewayLimits(c, new MemoryStore({ clock: new ManualClock(0), sweepIntervalMs: 0 }));
    expect(limits.publicAuth).toMatchObject({ quota: 1, window: 6, burst: 3, stepMs: 6_000 });
  });
});

describe('stepped refill of an endpoint rule', () => {
  it('takes refill instead of limit and window, burst defaulting to refill.tokens', () => {
    const c = load(`${BASE}  endpoints:
    - { pattern: /api/policy/*, name: pe, refill: { tokens: 5, every: 10 }, burst: 50 }
    - { pattern: /api/other/*, refill: { tokens: 2, every: 1m } }
`);
    expect(c.endpoints.map((e) => [e.name, e.limit, e.windowSeconds, e.burst, e.refill])).toEqual([
      ['pe', 5, 10, 50, { tokens: 5, every: 10 }],
      ['/api/other/*', 2, 60, 2, { tokens: 2, every: 60 }],
    ]);
    expect(Object.isFrozen(c.endpoints[0].refill)).toBe(true);
  });

  it('refuses refill combined with limit, window or class, each at its key', () => {
    expect(
      lines(
        violations(`${BASE}  endpoints:
    - pattern: /a
      refill: { tokens: 5, every: 10 }
      limit: 30
      window: 60s
    - pattern: /b
      class: rl.write
      refill: { tokens: 5, every: 10 }
ratelimit:
  rl.write: { per_minute: 120, burst: 30 }
`),
      ),
    ).toEqual([
      '8:7 rateLimiting.endpoints[0].limit: "limit" cannot be combined with "refill": refill sets the rate (tokens every seconds)',
      '9:7 rateLimiting.endpoints[0].window: "window" cannot be combined with "refill": refill sets the rate (tokens every seconds)',
      '12:7 rateLimiting.endpoints[1].refill: "refill" cannot be combined with "class": the class sets the limits',
    ]);
  });

  it('refuses a refill that is not whole tokens every whole seconds', () => {
    const v = violations(`${BASE}  endpoints:
    - { pattern: /a, refill: { tokens: 0, every: 10 } }
    - { pattern: /b, refill: { tokens: 5, every: 1500ms } }
    - { pattern: /c, refill: { tokens: 5, each: 10 } }
`);
    expect(v.map((x) => `${x.path}: ${x.message.split(';')[0]}`)).toEqual([
      'rateLimiting.endpoints[0].refill.tokens: must be >= 1, got 0',
      'rateLimiting.endpoints[1].refill.every: must be a whole number of seconds of at least 1s, got "1500ms"',
      'rateLimiting.endpoints[2].refill: missing required key "every"',
      'rateLimiting.endpoints[2].refill.each: unknown key "each"',
    ]);
  });

  it('still asks for limit and window (or a class) when a rule has none', () => {
    expect(violations(`${BASE}  endpoints:\n    - pattern: /a\n`).map((x) => x.message)).toEqual([
      'missing required key "limit" (or name a "class")',
      'missing required key "window", for example 60s (or name a "class")',
    ]);
  });
});

describe('stepped refill in the gateway limits', () => {
  const rule = (refill: string) => `${BASE}  endpoints:
    - { pattern: /api/policy/*, name: pe, ${refill}, burst: 50 }
`;
  const store = new MemoryStore({ clock: new ManualClock(0), sweepIntervalMs: 0 });
  const policyOf = (limits: GatewayLimits) => limits.limiter.policies.find((p) => p.name === 'pe');

  it('gives definePolicy the refill, and a reload reuses the policy only when the refill is the same', () => {
    const first = new GatewayLimits(load(rule('refill: { tokens: 5, every: 10 }')), store);
    expect(policyOf(first)).toMatchObject({
      quota: 5,
      window: 10,
      burst: 50,
      refill: { tokens: 5, every: 10 },
      stepMs: 10_000,
    });
    const same = new GatewayLimits(load(rule('refill: { tokens: 5, every: 10s }')), store, first);
    expect(policyOf(same)).toBe(policyOf(first));
    // The same quota and window refilled continuously is another policy: its buckets start over.
    const continuous = new GatewayLimits(load(rule('limit: 5, window: 10s')), store, same);
    expect(policyOf(continuous)).not.toBe(policyOf(same));
    expect(policyOf(continuous)).toMatchObject({ quota: 5, window: 10, stepMs: 0, refill: undefined });
    const stepped = new GatewayLimits(load(rule('refill: { tokens: 5, every: 10 }')), store, continuous);
    expect(policyOf(stepped)).not.toBe(policyOf(continuous));
    expect(policyOf(stepped)?.stepMs).toBe(10_000);
  });
});

describe("the design document's rate_limit block", () => {
  const block = requirementFixture('token-bucket-block.yaml').trimEnd();

  it('is the block as the design document writes it', () => {
    expect(block).toBe(
      // biome-ignore lint/suspicious/noTemplateCurlyInString: the design document's YAML, verbatim
      'rate_limit:\n  algorithm: token_bucket\n  bucket_size: ${BURST_LIMIT}\n  refill_rate: ${REQUESTS_PER_MINUTE} / 60\n  refill_interval: 1s',
    );
  });

  it('is refused at its line with the tiers that say the same, before its unset variables are reported', () => {
    const v = violations(`${BASE}${block}\n`);
    expect(v).toHaveLength(1);
    expect(v[0]).toMatchObject({ path: 'rate_limit', line: 5, column: 1 });
    expect(v[0].message).toBe(
      [
        "is the design document's token bucket, not a gateway key: it describes every tier's minute bucket,",
        'which the gateway already refills continuously at the same rate (requestsPerMinute / 60 per second, finer',
        'than refill_interval 1s). Write it per tier instead:',
        // biome-ignore lint/suspicious/noTemplateCurlyInString: the suggested YAML keeps the document's variables
        'rateLimiting: { tiers: { <tier>: { requestsPerMinute: ${REQUESTS_PER_MINUTE}, burstLimit: ${BURST_LIMIT} } } }',
        '(tiers standard already set them: remove rate_limit)',
      ].join(' '),
    );
  });

  it('shows literal numbers when the block has them, and is refused wherever other problems are', () => {
    const v = violations(`rate_limit:
  algorithm: token_bucket
  bucket_size: 50
  refill_rate: 300 / 60
  refill_interval: 1s
rateLimiting:
  defaultTier: standard
  tiers: {}
`);
    expect(v[0]).toMatchObject({ path: 'rate_limit', line: 1, column: 1 });
    expect(v[0].message).toContain(
      'rateLimiting: { tiers: { <tier>: { requestsPerMinute: 300, burstLimit: 50 } } }',
    );
    expect(v[0].message).not.toContain('already set them');
    expect(v.length).toBeGreaterThan(1);
  });
});
