import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { type OverrideRule, parseOverride } from '../core/index.js';
import { inRanges, parseIpRange } from './ip-address.js';
import { OverrideIndex, overridePattern } from './override-index.js';

const NOW = 1_000_000;
const ADDRESSES = ['10.0.0.1', '10.0.1.7', '10.9.0.1', '192.0.2.5', '2001:db8::1', '2001:db8:0:1::9'];
const RANGES = ['10.0.0.0/8', '10.0.0.0/16', '10.0.0.0/24', '192.0.2.0/24', '2001:db8::/32', '2001:db8::/64'];
const KEYS = ADDRESSES.map((a) => `ip:${a}`).concat(['tenant:acme:client:web', 'tenant:acme:user:1']);
const PATTERNS = [
  ...RANGES.map((r) => `ip:${r}`),
  ...KEYS,
  'ip:10.*',
  'ip:*',
  'tenant:acme',
  'tenant:acme:client:*',
];

/** Whether a rule's pattern takes in a bucket key or client IP, read from the rule alone. */
function covers(rule: OverrideRule, key: string, ip: string): boolean {
  const p = overridePattern(rule.pattern);
  if (p.kind === 'range') return inRanges(ip, [parseIpRange(rule.pattern.slice(3))!]);
  return p.kind === 'exact' ? key === p.value : key.startsWith(p.value);
}

const rule = fc.record({
  pattern: fc.constantFrom(...PATTERNS),
  scope: fc.constantFrom('none', 'policy', 'other-policy', 'tier', 'other-tier'),
  ttl: fc.option(fc.integer({ min: 1, max: 3 })),
  block: fc.constantFrom(403, 429),
});

describe('OverrideIndex', () => {
  it('finds, for any key and client IP asked any number of times, a rule of the narrowest kind that applies', () => {
    fc.assert(
      fc.property(
        fc.array(rule, { maxLength: 12 }),
        fc.array(
          fc.record({ at: fc.nat(KEYS.length - 1), ip: fc.constantFrom(...ADDRESSES), late: fc.boolean() }),
          {
            minLength: 1,
            maxLength: 20,
          },
        ),
        (specs, asks) => {
          const rules = specs.map((s) =>
            parseOverride(
              {
                pattern: s.pattern,
                reason: 'test',
                block: s.ttl === null ? 403 : s.block,
                ...(s.ttl === null ? {} : { ttlSeconds: s.ttl }),
                ...(s.scope === 'policy'
                  ? { policy: 'p' }
                  : s.scope === 'other-policy'
                    ? { policy: 'q' }
                    : {}),
                ...(s.scope === 'tier' ? { tier: 't' } : s.scope === 'other-tier' ? { tier: 'u' } : {}),
              },
              NOW,
              'test',
            ),
          );
          const index = new OverrideIndex(rules);
          for (const ask of asks) {
            const key = KEYS[ask.at];
            const now = ask.late ? NOW + 2500 : NOW;
            const found = index.find(key, 'p', 't', ask.ip, () => now);
            const applies = rules.filter(
              (r) =>
                covers(r, key, ask.ip) &&
                (r.expiresAt ?? Number.POSITIVE_INFINITY) > now &&
                (r.policy === undefined || r.policy === 'p') &&
                (r.tier === undefined || r.tier === 't'),
            );
            if (applies.length === 0) {
              expect(found).toBeUndefined();
              continue;
            }
            expect(found).toBeDefined();
            expect(applies).toContain(found?.rule);
            // Nothing that applies is narrower than the rule found.
            const rank = (r: OverrideRule) => {
              const p = overridePattern(r.pattern);
              const narrow = p.kind === 'exact' ? 1_000_000 : p.kind === 'prefix' ? p.value.length * 4 : 0;
              return narrow + (r.policy !== undefined ? 2 : r.tier !== undefined ? 1 : 0);
            };
            expect(Math.max(...applies.map(rank))).toBe(rank(found!.rule));
          }
        },
      ),
      { numRuns: 400 },
    );
  });

  it('parses a client IP once for all its range rules and policies', () => {
    const rules = RANGES.map((r) =>
      parseOverride({ pattern: `ip:${r}`, block: 403, policy: 'p', reason: 'test' }, NOW, 'test'),
    );
    const index = new OverrideIndex(rules);
    // A value that is not an address is in no range, and is no error.
    expect(index.find('ip:unknown', 'p', undefined, 'not an address', () => NOW)).toBeUndefined();
    expect(index.find('ip:10.0.0.1', 'p', undefined, '10.0.0.1', () => NOW)?.rule.pattern).toBe(
      'ip:10.0.0.0/8',
    );
    expect(index.find('ip:10.0.0.1', 'q', undefined, '10.0.0.1', () => NOW)).toBeUndefined();
    expect(index.find('ip:2001:db8::/64', 'p', undefined, '2001:db8::1', () => NOW)?.rule.pattern).toBe(
      'ip:2001:db8::/32',
    );
  });
});
