import { Writable } from 'node:stream';
import { overridePattern } from 'sluice/http';
import { MemoryOverrides } from 'sluice/memory';
import { describe, expect, it } from 'vitest';
import type { PenaltyConfig } from '../config/gateway-config.js';
import { createLogger } from '../log/create-logger.js';
import { OverrideControl } from './override-control.js';
import { MAX_PENALTY_BLOCKS, Penalties, type PenaltyBlock } from './penalties.js';
import type { Runtime } from './runtime.js';

const CONFIG: PenaltyConfig = Object.freeze({
  after: 3,
  withinMs: 10_000,
  blockMs: 60_000,
  maxBlockMs: 300_000,
  forgetAfterMs: 3_600_000,
  status: 429,
});

function setup(config: PenaltyConfig = CONFIG) {
  let now = Date.UTC(2026, 0, 1);
  const store = new MemoryOverrides(() => now);
  const logger = createLogger('silent', new Writable({ write: (_c, _e, cb) => cb() }));
  const control = new OverrideControl(
    store,
    () => undefined as unknown as Runtime,
    logger,
    () => now,
  );
  const blocks: PenaltyBlock[] = [];
  const full: string[] = [];
  const penalties = new Penalties(
    control,
    () => config,
    () => now,
    logger,
    (b) => blocks.push(b),
    (key) => full.push(key),
  );
  /** Denies the key `n` times, returning the block set by the last denial, if any. */
  const deny = (key: string, n: number) => {
    let b: PenaltyBlock | undefined;
    for (let i = 0; i < n; i++) b = penalties.limited(key);
    return b;
  };
  return {
    store,
    blocks,
    full,
    penalties,
    deny,
    advance: (ms: number) => {
      now += ms;
    },
  };
}

const minutes = (b: PenaltyBlock | undefined) => (b === undefined ? undefined : b.durationMs / 60_000);

describe('penalty blocks', () => {
  it('blocks a key limited `after` times within the window, through the override store', async () => {
    const { deny, store, blocks, advance } = setup();
    expect(deny('ip:192.0.2.1', 2)).toBeUndefined();
    advance(10_000); // the window ends: the count starts again
    expect(deny('ip:192.0.2.1', 2)).toBeUndefined();
    const b = deny('ip:192.0.2.1', 1);
    expect(b).toEqual({ key: 'ip:192.0.2.1', durationMs: 60_000, level: 0, status: 429 });
    await new Promise((r) => setImmediate(r));
    expect(store.snapshot().rules).toMatchObject([
      {
        pattern: 'ip:192.0.2.1',
        effect: 'block',
        status: 429,
        author: 'penalty',
        // The author is shown beside the reason: the reason does not repeat it.
        reason: 'limited 3 times within 10s (block 1 in a row)',
      },
    ]);
    expect(blocks).toHaveLength(1);
    // Denials that race the block do not count.
    expect(deny('ip:192.0.2.1', 5)).toBeUndefined();
  });

  it.each([
    ['tenant:acme:user:john doe', 'tenant:acme:user:john%20doe'],
    ['tenant:müller:client:web', 'tenant:m%C3%BCller:client:web'],
    ['principal:a\u0007*b', 'principal:a%07%2Ab'],
  ])(
    'blocks %j, a key with a space, a control or a non-ASCII character, by its escaped pattern',
    async (key, pattern) => {
      const { deny, store, blocks } = setup();
      expect(deny(key, 3)).toMatchObject({ key });
      await new Promise((r) => setImmediate(r));
      expect(store.snapshot().rules).toMatchObject([{ pattern, effect: 'block', author: 'penalty' }]);
      expect(blocks).toHaveLength(1);
      // The pattern names that key exactly.
      expect(overridePattern(pattern)).toEqual({ kind: 'exact', value: key });
    },
  );

  it('doubles on each repeat up to the ceiling, and starts again after a quiet time', () => {
    const { deny, advance } = setup();
    const durations: (number | undefined)[] = [];
    for (let i = 0; i < 5; i++) {
      durations.push(minutes(deny('k', 3)));
      advance(durations.at(-1)! * 60_000 + 1000); // the block ends, the key offends again
    }
    expect(durations).toEqual([1, 2, 4, 5, 5]);
    advance(3_600_000); // an hour with no block: forgotten
    expect(minutes(deny('k', 3))).toBe(1);
  });

  it('keeps at most MAX_PENALTY_BLOCKS in force, so a flood of keys cannot grow the rules without end', async () => {
    const { deny, store, full, penalties, advance } = setup();
    for (let i = 0; i < MAX_PENALTY_BLOCKS; i++)
      expect(deny(`ip:10.0.${i >> 8}.${i & 255}`, 3)).toBeDefined();
    expect(penalties.active).toBe(MAX_PENALTY_BLOCKS);
    // One more key: still limited by its buckets, but no block, and the operator is told.
    expect(deny('ip:192.0.2.1', 3)).toBeUndefined();
    expect(full).toEqual(['ip:192.0.2.1']);
    await new Promise((r) => setImmediate(r));
    expect(store.snapshot().rules).toHaveLength(MAX_PENALTY_BLOCKS);
    // Once the blocks end there is room again.
    advance(60_000);
    expect(penalties.active).toBe(0);
    expect(minutes(deny('ip:192.0.2.1', 3))).toBe(1);
  });

  it('keeps keys apart and does nothing without a penalty section', () => {
    const { deny } = setup();
    expect(deny('a', 2)).toBeUndefined();
    expect(deny('b', 2)).toBeUndefined();
    expect(minutes(deny('a', 1))).toBe(1);
    const off = new Penalties(
      undefined as unknown as OverrideControl,
      () => undefined,
      () => 0,
      createLogger('silent'),
      () => undefined,
    );
    expect(off.limited('a')).toBeUndefined();
  });
});
