import { Writable } from 'node:stream';
import type { OverrideStore } from 'sluice';
import { MemoryOverrides } from 'sluice/memory';
import { SharedOverrides } from 'sluice/shared';
import { describe, expect, it } from 'vitest';
import type { PenaltyConfig } from '../config/gateway-config.js';
import { createLogger } from '../log/create-logger.js';
import { OverrideControl } from './override-control.js';
import { Penalties, type PenaltyBlock } from './penalties.js';
import type { Runtime } from './runtime.js';

const CONFIG: PenaltyConfig = Object.freeze({
  after: 3,
  withinMs: 10_000,
  blockMs: 20_000,
  maxBlockMs: 300_000,
  forgetAfterMs: 3_600_000,
  status: 429,
});

/** The stores of one process and of the threads of one process (`--threads`); Redis has its own suite. */
const STORES: readonly [string, (now: () => number) => OverrideStore][] = [
  ['memory', (now) => new MemoryOverrides(now)],
  ['shared', (now) => new SharedOverrides({ wallClock: now })],
];

function setup(open: (now: () => number) => OverrideStore) {
  let now = Date.UTC(2026, 0, 1);
  const store = open(() => now);
  const logger = createLogger('silent', new Writable({ write: (_c, _e, cb) => cb() }));
  const control = new OverrideControl(
    store,
    () => undefined as unknown as Runtime,
    logger,
    () => now,
  );
  const blocks: PenaltyBlock[] = [];
  const penalties = new Penalties(
    control,
    () => CONFIG,
    () => now,
    logger,
    (b) => blocks.push(b),
  );
  const deny = (key: string, n: number) => {
    let b: PenaltyBlock | undefined;
    for (let i = 0; i < n; i++) b = penalties.limited(key) ?? b;
    return b;
  };
  const settle = () => new Promise((r) => setImmediate(r));
  return { store, control, blocks, deny, settle, advance: (ms: number) => (now += ms) };
}

describe.each(STORES)('penalties beside operator rules (%s store)', (_name, open) => {
  it("never replaces an operator's block with a shorter, weaker penalty block", async () => {
    const { control, store, blocks, deny, settle, advance } = setup(open);
    const block = await control.set(
      { pattern: 'ip:192.0.2.7', block: 403, ttlSeconds: 600, reason: 'abuse' },
      'alice',
    );
    expect(deny('ip:192.0.2.7', 9)).toBeUndefined();
    await settle();
    expect(store.snapshot().rules).toEqual([block]);
    expect(blocks).toEqual([]);
    // Past the penalty's 20 s, the operator's 403 still holds.
    advance(30_000);
    expect(control.list()).toMatchObject([{ id: 'ip:192.0.2.7', status: 403, author: 'alice' }]);
    expect((await control.history()).map((c) => c.who)).toEqual(['alice']);
  });

  it("keeps an operator's limit override on the key", async () => {
    const { control, store, deny, settle } = setup(open);
    const limit = await control.set(
      { pattern: 'tenant:acme:client:web', quota: 6000, window: 60, reason: 'launch' },
      'alice',
    );
    deny('tenant:acme:client:web', 3);
    await settle();
    expect(store.snapshot().rules).toEqual([limit]);
  });

  it('blocks a key with no operator rule, and an operator rule set later replaces the penalty', async () => {
    const { control, store, blocks, deny, settle, advance } = setup(open);
    expect(deny('ip:192.0.2.9', 3)).toMatchObject({ key: 'ip:192.0.2.9', status: 429 });
    await settle();
    expect(blocks).toHaveLength(1);
    expect(store.snapshot().rules).toMatchObject([{ id: 'ip:192.0.2.9', author: 'penalty' }]);
    advance(1_000);
    const forGood = await control.set({ pattern: 'ip:192.0.2.9', block: 403, reason: 'for good' }, 'alice');
    expect(store.snapshot().rules).toEqual([forGood]);
    // The automatic change and the operator's, each in its history, merged in time order.
    expect((await control.history()).map((c) => c.who)).toEqual(['penalty', 'alice']);
  });

  it('the store refuses an automatic rule over an operator rule the caller has not seen yet', async () => {
    const { control, store } = setup(open);
    await control.set({ pattern: 'ip:192.0.2.10', block: 403, reason: 'abuse' }, 'alice');
    const stale = Object.freeze({
      id: 'ip:192.0.2.10',
      pattern: 'ip:192.0.2.10',
      effect: 'block' as const,
      status: 429 as const,
      expiresAt: Date.UTC(2026, 0, 1) + 20_000,
      reason: 'limited',
      author: 'penalty',
      createdAt: Date.UTC(2026, 0, 1),
    });
    const change = { action: 'set' as const, id: stale.id, rule: stale, who: 'penalty', at: 0, reason: 'x' };
    expect(await store.set(stale, change, { automatic: true })).toBe(false);
    expect(store.snapshot().rules).toMatchObject([{ author: 'alice', status: 403 }]);
  });

  it('counts no block when the store keeps an operator rule this gateway had not seen yet', async () => {
    let stale = false;
    const { control, store, blocks, deny, settle, advance } = setup((now) => {
      const inner = open(now);
      // As a gateway on Redis between two reads: the snapshot it holds lags the store.
      const empty = Object.freeze({ version: 0, rules: Object.freeze([]) });
      return {
        kind: inner.kind,
        snapshot: () => (stale ? empty : inner.snapshot()),
        set: (r, c, o) => inner.set(r, c, o),
        remove: (id, c) => inner.remove(id, c),
        history: () => inner.history(),
        refresh: () => inner.refresh(),
        close: () => inner.close(),
      };
    });
    await control.set({ pattern: 'ip:192.0.2.11', block: 403, ttlSeconds: 60, reason: 'abuse' }, 'alice');
    stale = true;
    expect(deny('ip:192.0.2.11', 3)).toMatchObject({ level: 0 });
    await settle();
    expect(blocks).toEqual([]);
    stale = false;
    expect(store.snapshot().rules).toMatchObject([{ author: 'alice', status: 403 }]);
    // The operator's rule ends: the key's next penalty is a first one, not a doubled one.
    advance(61_000);
    expect(deny('ip:192.0.2.11', 3)).toMatchObject({ level: 0, durationMs: 20_000 });
    await settle();
    expect(blocks).toHaveLength(1);
  });
});
