import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  AUTOMATIC_HISTORY_LIMIT,
  OVERRIDE_HISTORY_LIMIT,
  type OverrideChange,
  type OverrideInput,
  type OverrideRule,
  type OverrideStore,
  parseOverride,
} from '../src/core/index.js';
import { mergeHistories } from '../src/core/override-writes.js';
import { MemoryOverrides } from '../src/memory/index.js';
import { SharedOverrides } from '../src/shared/index.js';

const NOW = Date.UTC(2026, 0, 1);

/** The in-process stores: one process (memory) and the threads of one process (the shared buffer). */
const STORES: readonly [string, (now: () => number) => OverrideStore][] = [
  ['memory', (now) => new MemoryOverrides(now)],
  ['shared', (now) => new SharedOverrides({ wallClock: now, bytes: 4 * 1024 * 1024 })],
];

const change = (rule: OverrideRule, at: number): OverrideChange => ({
  action: 'set',
  id: rule.id,
  rule,
  who: rule.author,
  at,
  reason: rule.reason,
});

describe.each(STORES)('automatic rules beside operator rules (%s store)', (_name, open) => {
  it('never replaces, shortens or weakens an operator rule of the same id, and replaces its own', async () => {
    let now = NOW;
    const store = open(() => now);
    const operatorBlock = parseOverride(
      { pattern: 'ip:192.0.2.7', block: 403, ttlSeconds: 600, reason: 'abuse' },
      now,
      'alice',
    );
    expect(await store.set(operatorBlock, change(operatorBlock, now))).toBe(true);
    const penalty = (input: OverrideInput) => parseOverride(input, now, 'penalty');
    const short = penalty({ pattern: 'ip:192.0.2.7', block: 429, ttlSeconds: 20, reason: 'limited' });
    expect(await store.set(short, change(short, now), { automatic: true })).toBe(false);
    expect(store.snapshot().rules).toEqual([operatorBlock]);
    // An operator's limit override is kept as well.
    const limit = parseOverride(
      { pattern: 'tenant:acme', quota: 600, window: 60, reason: 'deal' },
      now,
      'bob',
    );
    await store.set(limit, change(limit, now));
    const onTenant = penalty({ pattern: 'tenant:acme', block: 429, ttlSeconds: 20, reason: 'limited' });
    expect(await store.set(onTenant, change(onTenant, now), { automatic: true })).toBe(false);
    expect(store.snapshot().rules.find((r) => r.id === 'tenant:acme')).toEqual(limit);
    // A key with no rule, or with an automatic rule of its own, takes it (a repeat doubles the block).
    const first = penalty({ pattern: 'ip:192.0.2.8', block: 429, ttlSeconds: 20, reason: 'limited' });
    expect(await store.set(first, change(first, now), { automatic: true })).toBe(true);
    const second = penalty({ pattern: 'ip:192.0.2.8', block: 429, ttlSeconds: 40, reason: 'again' });
    expect(await store.set(second, change(second, now), { automatic: true })).toBe(true);
    expect(store.snapshot().rules.find((r) => r.id === 'ip:192.0.2.8')).toEqual(second);
    // Once the operator's rule ended, the key is free for a penalty; an operator always replaces one.
    now += 601_000;
    const later = penalty({ pattern: 'ip:192.0.2.7', block: 429, ttlSeconds: 20, reason: 'limited' });
    expect(await store.set(later, change(later, now), { automatic: true })).toBe(true);
    const again = parseOverride({ pattern: 'ip:192.0.2.7', block: 403, reason: 'for good' }, now, 'alice');
    expect(await store.set(again, change(again, now))).toBe(true);
    expect(store.snapshot().rules.find((r) => r.id === 'ip:192.0.2.7')).toEqual(again);
  });

  it('keeps every operator change in the history however many automatic ones follow', async () => {
    let now = NOW;
    const store = open(() => now);
    const op = parseOverride({ pattern: 'tenant:acme', block: 403, reason: 'kept' }, now, 'alice');
    await store.set(op, change(op, now));
    for (let i = 0; i < AUTOMATIC_HISTORY_LIMIT + 200; i++) {
      now += 1;
      const p = parseOverride(
        // A few keys again and again: the history grows, the rules do not (each write rewrites them all).
        { pattern: `ip:198.51.100.${i % 8}`, block: 429, ttlSeconds: 20, reason: 'limited' },
        now,
        'penalty',
      );
      await store.set(p, change(p, now), { automatic: true });
    }
    const history = await store.history();
    expect(history[0]).toMatchObject({ who: 'alice', reason: 'kept' });
    expect(history.filter((c) => c.who === 'penalty')).toHaveLength(AUTOMATIC_HISTORY_LIMIT);
    // The automatic ones kept are the latest, and the merged history is in time order.
    expect(history.at(-1)?.at).toBe(now);
    expect(history.map((c) => c.at)).toEqual([...history.map((c) => c.at)].sort((a, b) => a - b));
  });
});

describe('the history of operators and automatic changes', () => {
  const arbChanges = (who: string) =>
    fc
      .array(fc.integer({ min: 0, max: 50 }), { maxLength: 30 })
      .map((ats) =>
        ats
          .sort((a, b) => a - b)
          .map((at, i): OverrideChange => ({ action: 'set', id: `${who}${i}`, who, at, reason: 'r' })),
      );

  it('merges the two histories in time order, losing and reordering nothing within each', () => {
    fc.assert(
      fc.property(arbChanges('op'), arbChanges('penalty'), (ops, auto) => {
        const merged = mergeHistories(ops, auto);
        expect(merged).toHaveLength(ops.length + auto.length);
        expect(merged.filter((c) => c.who === 'op')).toEqual(ops);
        expect(merged.filter((c) => c.who === 'penalty')).toEqual(auto);
        for (let i = 1; i < merged.length; i++) expect(merged[i].at).toBeGreaterThanOrEqual(merged[i - 1].at);
      }),
    );
  });

  it('never lets automatic writes push out or replace what operators set (any interleaving)', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.record({ operator: fc.boolean(), key: fc.integer({ min: 0, max: 3 }) }), {
          maxLength: 40,
        }),
        async (writes) => {
          for (const [, open] of STORES) {
            const store = open(() => NOW);
            const operatorRules = new Map<string, OverrideRule>();
            let operatorChanges = 0;
            for (const w of writes) {
              const rule = parseOverride(
                {
                  pattern: `ip:192.0.2.${w.key}`,
                  block: w.operator ? 403 : 429,
                  ttlSeconds: 60,
                  reason: 'r',
                },
                NOW,
                w.operator ? 'alice' : 'penalty',
              );
              await store.set(rule, change(rule, NOW), { automatic: !w.operator });
              if (w.operator) {
                operatorRules.set(rule.id, rule);
                operatorChanges++;
              }
            }
            for (const [id, rule] of operatorRules)
              expect(store.snapshot().rules.find((r) => r.id === id)).toEqual(rule);
            const kept = (await store.history()).filter((c) => c.who === 'alice');
            expect(kept).toHaveLength(Math.min(operatorChanges, OVERRIDE_HISTORY_LIMIT));
          }
        },
      ),
      { numRuns: 60 },
    );
  });
});
