import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  ErrorCode,
  type OverrideChange,
  type OverrideRule,
  parseOverride,
  SluiceError,
} from '../core/index.js';
import { OverrideApplier } from '../http/apply-overrides.js';
import { OverrideIndex } from '../http/override-index.js';
import { MemoryOverrides } from '../memory/index.js';
import { DEFAULT_OVERRIDE_BYTES, SharedOverrides } from './index.js';
import { OverrideJournal } from './override-journal.js';

const NOW = 1_000_000;
const PATTERNS = [
  'tenant:acme',
  'tenant:acme:client:web',
  'tenant:acme:client:*',
  'tenant:beta:user:u1',
  'ip:10.0.0.1',
  'ip:10.0.0.0/8',
  'ip:2001:db8::/48',
  'principal:john%20doe',
];
const KEYS = ['tenant:acme:client:web', 'tenant:acme:user:u2', 'tenant:beta:user:u1', 'ip:10.0.0.1'];
const IPS = ['10.0.0.1', '2001:db8::5', '192.0.2.1'];

const rule = (
  pattern: string,
  scope: string,
  effect: number,
  ttl: number | null,
  author: string,
  now: number,
) =>
  parseOverride(
    {
      pattern,
      ...(scope === 'policy' ? { policy: 'p' } : scope === 'tier' ? { tier: 'gold' } : {}),
      ...(effect === 0 ? { block: 403 } : effect === 1 ? { unlimited: true } : { quota: 5, window: 60 }),
      ...(ttl === null ? {} : { ttlSeconds: ttl }),
      reason: 'test',
    },
    now,
    author,
  );

const changeOf = (r: OverrideRule, who: string, at: number): OverrideChange => ({
  action: 'set',
  id: r.id,
  rule: r,
  who,
  at,
  reason: 'x',
});

const op = fc.oneof(
  fc.record({
    kind: fc.constant('set' as const),
    writer: fc.nat(1),
    pattern: fc.constantFrom(...PATTERNS),
    scope: fc.constantFrom('none', 'policy', 'tier'),
    effect: fc.integer({ min: 0, max: 2 }),
    ttl: fc.option(fc.integer({ min: 1, max: 3 })),
    automatic: fc.boolean(),
  }),
  fc.record({ kind: fc.constant('remove' as const), writer: fc.nat(1), pick: fc.nat() }),
);

function sameFinds(index: OverrideIndex | undefined, fresh: OverrideIndex, now: number): void {
  for (const key of KEYS)
    for (const ip of IPS)
      for (const [policy, tier] of [
        ['p', 'gold'],
        ['q', undefined],
      ] as const) {
        const got = index?.find(key, policy, tier, ip, () => now)?.rule;
        const want = fresh.find(key, policy, tier, ip, () => now)?.rule;
        expect(got?.id, `${key} ${ip} ${policy}`).toBe(want?.id);
        expect(got).toEqual(want);
      }
}

const live = (rules: readonly OverrideRule[], now: number) =>
  rules.filter((r) => r.expiresAt === undefined || r.expiresAt > now).map((r) => r.id);

const FULL = Symbol('full');
function full(e: unknown): typeof FULL {
  if (e instanceof SluiceError && e.code === ErrorCode.OverridesFull) return FULL;
  throw e;
}

describe('SharedOverrides by its log of changes', () => {
  it('an index updated from the shared log finds exactly what one built whole finds; rules and histories match the memory store', async () => {
    let compacted = 0;
    await fc.assert(
      fc.asyncProperty(fc.array(op, { minLength: 30, maxLength: 90 }), fc.nat(), async (ops, readEvery) => {
        let now = NOW;
        const clock = () => now;
        // Small: the log fills and is written again within a run, and may refuse a write near the end.
        const a = new SharedOverrides({ bytes: 20 * 1024, wallClock: clock });
        const b = new SharedOverrides({ buffer: a.buffer, wallClock: clock });
        const reader = new SharedOverrides({ buffer: a.buffer, wallClock: clock });
        const reference = new MemoryOverrides(clock);
        const applier = new OverrideApplier(reader, '');
        for (const [i, o] of ops.entries()) {
          const writer = o.writer === 0 ? a : b;
          if (o.kind === 'set') {
            const author = o.automatic ? 'penalty' : 'ops';
            const r = rule(o.pattern, o.scope, o.effect, o.ttl, author, now);
            const options = { automatic: o.automatic };
            const got = await writer.set(r, changeOf(r, author, now), options).catch(full);
            // A refused write changed nothing: the memory store does not make it either.
            if (got !== FULL) expect(got).toBe(await reference.set(r, changeOf(r, author, now), options));
          } else {
            const ids = live(reference.snapshot().rules, now);
            const id = ids.length === 0 ? 'tenant:none' : ids[o.pick % ids.length];
            const c: OverrideChange = { action: 'remove', id, who: 'ops', at: now, reason: 'x' };
            const got = await writer.remove(id, c).catch(full);
            if (got !== FULL) expect(got).toEqual(await reference.remove(id, c));
          }
          now += 700;
          if (i % ((readEvery % 4) + 1) !== 0) continue;
          const snap = reader.snapshot();
          expect(live(snap.rules, now)).toEqual(live(reference.snapshot().rules, now));
          sameFinds(applier.current(), new OverrideIndex(snap.rules), now);
        }
        const late = new SharedOverrides({ buffer: a.buffer, wallClock: clock });
        expect(live(late.snapshot().rules, now)).toEqual(live(reference.snapshot().rules, now));
        sameFinds(applier.current(), new OverrideIndex(late.snapshot().rules), now);
        expect(await late.history()).toEqual(await reference.history());
        if ((OverrideJournal.attach(a.buffer)?.generation ?? 0) > 0) compacted++;
      }),
      { numRuns: 100 },
    );
    // The runs went through compactions of the log, not only appends. How many do depends on the generated runs
    // (9 to 20 of 100 seen): the bound says "some", not a share that a fresh seed can miss.
    expect(compacted).toBeGreaterThan(2);
  });

  it('hands a reader the changes since its version, and updates its index in place', async () => {
    const a = new SharedOverrides({ wallClock: () => NOW });
    const reader = new SharedOverrides({ buffer: a.buffer, wallClock: () => NOW });
    const applier = new OverrideApplier(reader, '');
    const first = rule('tenant:acme', 'none', 0, null, 'ops', NOW);
    await a.set(first, changeOf(first, 'ops', NOW));
    const index = applier.current();
    const held = reader.snapshot().version;
    const second = rule('tenant:beta', 'none', 0, null, 'ops', NOW);
    await a.set(second, changeOf(second, 'ops', NOW));
    expect(reader.snapshot().changesSince?.(held)).toEqual([{ id: 'tenant:beta', rule: second }]);
    expect(reader.snapshot().ruleOf?.('tenant:beta')).toEqual(second);
    expect(applier.current()).toBe(index);
    expect(index?.find('tenant:beta:client:x', 'p', undefined, undefined, () => NOW)?.rule.id).toBe(
      'tenant:beta',
    );
  });

  it('refuses a new rule before the rules fill the buffer, so that a full buffer never compacts on every write', async () => {
    const store = new SharedOverrides({ bytes: 1024 * 1024, wallClock: () => NOW });
    const set = async (i: number) => {
      const r = rule(`tenant:n${i}`, 'none', 0, null, 'ops', NOW);
      return store.set(r, changeOf(r, 'ops', NOW)).then(() => undefined, full);
    };
    let n = 0;
    while ((await set(n)) === undefined) n++;
    expect(n).toBeGreaterThan(50);
    const generation = () => OverrideJournal.attach(store.buffer)?.generation ?? 0;
    const before = generation();
    // Operators set the rules in force again (no new rule): each write appends, and the log is compacted once per
    // quarter of the buffer written at most, not once per write.
    for (let i = 0; i < 4000; i++) expect(await set(i % n)).toBeUndefined();
    expect(generation() - before).toBeLessThan(8);
    // Removals are never refused, and the room they free (once the history is full, a change replaces one) takes
    // a new rule again.
    for (let i = 0; i < 10; i++) {
      const id = `tenant:n${i}`;
      await store.remove(id, { action: 'remove', id, who: 'ops', at: NOW, reason: 'x' });
    }
    expect(await set(n)).toBeUndefined();
    expect(store.snapshot().rules).toHaveLength(n - 9);
  });

  it('holds 100,000 rules in the default buffer and refuses, naming the room, past it', async () => {
    expect(DEFAULT_OVERRIDE_BYTES).toBeGreaterThanOrEqual(64 * 1024 * 1024);
    const store = new SharedOverrides({ wallClock: () => NOW });
    for (let i = 0; i < 100_000; i++) {
      const r = parseOverride(
        { pattern: `tenant:t${i}:client:web`, block: 429, ttlSeconds: 3600, reason: 'automatic block' },
        NOW,
        'penalty',
      );
      await store.set(r, changeOf(r, 'penalty', NOW), { automatic: true });
    }
    const other = new SharedOverrides({ buffer: store.buffer });
    expect(other.snapshot().rules).toHaveLength(100_000);
    expect(other.snapshot().ruleOf?.('tenant:t99999:client:web')?.status).toBe(429);

    const small = new SharedOverrides({ bytes: 16 * 1024, wallClock: () => NOW });
    let refused: unknown;
    let set = 0;
    for (; set < 1000 && refused === undefined; set++) {
      const r = rule(`tenant:s${set}`, 'none', 0, null, 'ops', NOW);
      refused = await small.set(r, changeOf(r, 'ops', NOW)).then(
        () => undefined,
        (e: unknown) => e,
      );
    }
    expect(refused).toMatchObject({ code: ErrorCode.OverridesFull });
    expect((refused as Error).message).toMatch(/bytes/);
    // Nothing was dropped: every rule written before the refusal is there, the refused one is not.
    expect(small.snapshot().rules).toHaveLength(set - 1);
    expect(new SharedOverrides({ buffer: small.buffer }).snapshot().rules).toHaveLength(set - 1);
  });
});
