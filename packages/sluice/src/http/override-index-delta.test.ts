import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { type OverrideRule, parseOverride } from '../core/index.js';
import { MemoryOverrides } from '../memory/index.js';
import { OverrideApplier } from './apply-overrides.js';
import { OverrideIndex } from './override-index.js';

const NOW = 1_000_000;
const PATTERNS = [
  'tenant:acme',
  'tenant:acme:client:web',
  'tenant:acme:client:*',
  'tenant:beta:user:u1',
  'ip:10.0.0.1',
  'ip:10.0.0.0/8',
  'ip:2001:db8::/48',
  'ip:10.*',
  'principal:john%20doe',
];
const KEYS = [
  'tenant:acme:client:web',
  'tenant:acme:user:u2',
  'tenant:beta:user:u1',
  'ip:10.0.0.1',
  'principal:john doe',
];
const IPS = ['10.0.0.1', '2001:db8::5', '192.0.2.1'];

const rule = (pattern: string, scope: string, effect: number, ttl: number | null) =>
  parseOverride(
    {
      pattern,
      ...(scope === 'policy' ? { policy: 'p' } : scope === 'tier' ? { tier: 'gold' } : {}),
      ...(effect === 0 ? { block: 403 } : effect === 1 ? { unlimited: true } : { quota: 5, window: 60 }),
      ...(ttl === null ? {} : { ttlSeconds: ttl }),
      reason: 'test',
    },
    NOW,
    'test',
  );

const op = fc.oneof(
  fc.record({
    kind: fc.constant('set' as const),
    pattern: fc.constantFrom(...PATTERNS),
    scope: fc.constantFrom('none', 'policy', 'tier'),
    effect: fc.integer({ min: 0, max: 2 }),
    ttl: fc.option(fc.integer({ min: 1, max: 3 })),
  }),
  fc.record({ kind: fc.constant('remove' as const), pick: fc.nat() }),
);

describe('the override index follows a store by its changes', () => {
  it('after any writes, finds what an index built from the whole list finds, without being rebuilt', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(op, { minLength: 1, maxLength: 30 }), fc.nat(), async (ops, readEvery) => {
        let now = NOW;
        const store = new MemoryOverrides(() => now);
        const applier = new OverrideApplier(store, '');
        await store.set(rule('tenant:zeta', 'none', 0, null), {
          action: 'set',
          id: 'tenant:zeta',
          who: 't',
          at: now,
          reason: 'x',
        });
        const first = applier.current();
        expect(first).toBeDefined();
        for (const [i, o] of ops.entries()) {
          if (o.kind === 'set') {
            const r = rule(o.pattern, o.scope, o.effect, o.ttl);
            await store.set(r, { action: 'set', id: r.id, who: 't', at: now, reason: 'x' });
          } else {
            const rules = store.snapshot().rules;
            if (rules.length > 0) {
              const id = rules[o.pick % rules.length].id;
              await store.remove(id, { action: 'remove', id, who: 't', at: now, reason: 'x' });
            }
          }
          now += 700;
          if (i % ((readEvery % 4) + 1) !== 0) continue;
          const index = applier.current();
          // Updated in place: a write costs its own rule, not a compile of every rule (none while no rule is held).
          if (store.snapshot().rules.length > 0) expect(index).toBe(first);
          else expect(index).toBeUndefined();
          const fresh = new OverrideIndex(store.snapshot().rules);
          for (const key of KEYS)
            for (const ip of IPS)
              for (const [policy, tier] of [
                ['p', 'gold'],
                ['q', undefined],
              ] as const) {
                const got = index?.find(key, policy, tier, ip, () => now)?.rule;
                const want = fresh.find(key, policy, tier, ip, () => now)?.rule;
                expect(got?.id, `${key} ${ip} ${policy}`).toBe(want?.id);
                expect(got).toBe(want);
              }
        }
      }),
      { numRuns: 200 },
    );
  });

  it('rebuilds from the whole list when the store keeps no log of its changes', () => {
    let snapshot = { version: 1, rules: [rule('tenant:acme', 'none', 0, null)] as readonly OverrideRule[] };
    const store = {
      kind: 'fixed',
      snapshot: () => snapshot,
      set: async () => true,
      remove: async () => undefined,
      history: async () => [],
      refresh: () => undefined,
      close: () => undefined,
    };
    const applier = new OverrideApplier(store, '');
    const before = applier.current();
    snapshot = { version: 2, rules: [...snapshot.rules, rule('tenant:beta', 'none', 0, null)] };
    const after = applier.current();
    expect(after).not.toBe(before);
    expect(after?.find('tenant:beta:client:x', 'p', undefined, undefined, () => NOW)?.rule.id).toBe(
      'tenant:beta',
    );
  });
});

describe('MemoryOverrides by id', () => {
  it('finds a rule by id as the list has it, and writes copy no list', async () => {
    let now = NOW;
    const store = new MemoryOverrides(() => now);
    const a = rule('tenant:acme', 'none', 0, 1);
    const b = rule('tenant:beta', 'none', 0, null);
    await store.set(a, { action: 'set', id: a.id, who: 't', at: now, reason: 'x' });
    await store.set(b, { action: 'set', id: b.id, who: 't', at: now, reason: 'x' });
    expect(store.snapshot().ruleOf?.('tenant:acme')).toBe(a);
    expect(store.snapshot().ruleOf?.('tenant:none')).toBeUndefined();
    now += 5000;
    const c = rule('tenant:gamma', 'none', 0, null);
    await store.set(c, { action: 'set', id: c.id, who: 't', at: now, reason: 'x' });
    // The expired rule went with the write; the list is built when read, in the order rules were set.
    expect(store.snapshot().rules.map((r) => r.id)).toEqual(['tenant:beta', 'tenant:gamma']);
    expect(store.snapshot().ruleOf?.('tenant:acme')).toBeUndefined();
  });
});
