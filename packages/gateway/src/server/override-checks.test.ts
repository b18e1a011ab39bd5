import { definePolicy, type OverrideRule } from 'sluice';
import { describe, expect, it } from 'vitest';
import { keyFormIssue } from './key-form.js';
import { overrideChecks } from './override-checks.js';

const free = definePolicy({ name: 'free', quota: 60, window: 60, burst: 5 });
const hour = definePolicy({ name: 'free.hour', quota: 600, window: 3600, burst: 600 });
const limit = (id: string, pattern: string, extra: Partial<OverrideRule> = {}): OverrideRule => ({
  id,
  pattern,
  effect: 'limit',
  quota: 1,
  window: 3600,
  burst: 1,
  reason: 'test',
  author: 'test',
  createdAt: 0,
  ...extra,
});
const ids = (rules: OverrideRule[], key: string) =>
  overrideChecks([free, hour], rules, key, key, 1000).map((c) => `${c.override} ${c.policy.name}`);

describe('overrideChecks', () => {
  it('finds the limit rules naming a key, in scope and in force', () => {
    const rules = [
      limit('a', 'ip:192.0.2.1'),
      limit('b', 'ip:192.0.2.0/24', { policy: 'free.hour' }),
      limit('c', 'ip:192.0.2.2'),
      limit('d', 'ip:192.0.2.1', { expiresAt: 1000 }),
      { ...limit('e', 'ip:192.0.2.1'), effect: 'block' as const },
    ];
    expect(ids(rules, 'ip:192.0.2.1')).toEqual(['a free', 'a free.hour', 'b free.hour']);
  });

  it('gives a concurrency policy no bucket under a limit rule (it keeps its slots)', () => {
    const slots = definePolicy({ name: 'slots', concurrent: 1 });
    const checks = overrideChecks([free, slots], [limit('a', 'ip:192.0.2.1')], 'ip:192.0.2.1', 'k', 1000);
    expect(checks.map((c) => c.policy.name)).toEqual(['free']);
  });

  it('matches tenant prefixes and an IPv6 /64 key against wider and narrower ranges', () => {
    const rules = [
      limit('t', 'tenant:acme'),
      limit('w', 'ip:2001:db8::/48', { policy: 'free' }),
      limit('n', 'ip:2001:db8::7', { policy: 'free' }),
      limit('o', 'ip:2001:db8:0:1::7', { policy: 'free' }),
    ];
    expect(ids(rules, 'tenant:acme:client:web')).toEqual(['t free', 't free.hour']);
    expect(ids(rules, 'ip:2001:db8::/64')).toEqual(['w free', 'n free']);
  });
});

describe('keyFormIssue', () => {
  it('takes the keys the gateway makes and refuses others', () => {
    for (const key of [
      'ip:192.0.2.1',
      'ip:2001:db8::/64',
      'tenant:acme:client:web',
      'principal:alice',
      'ip:unknown',
    ])
      expect(keyFormIssue(key), key).toBeUndefined();
    for (const key of ['acme:ci-bot', 'ip:192.0.2.0/24', 'ip:2001:db8::1/64', 'tenant:acme', 'tenant:*', 'x'])
      expect(keyFormIssue(key), key).toBeDefined();
  });
});
