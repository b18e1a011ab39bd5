import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { SluiceError } from './errors.js';
import { OVERRIDE_HISTORY_LIMIT, type OverrideChange } from './override.js';
import { parseOverride, readStoredOverride } from './override-parse.js';
import { withChange, withOverride } from './override-writes.js';

const NOW = Date.UTC(2026, 0, 1);

function fieldOf(f: () => unknown): string | undefined {
  try {
    f();
  } catch (e) {
    expect(e).toBeInstanceOf(SluiceError);
    expect((e as SluiceError).code).toBe('ERR_INVALID_OPTION');
    return (e as SluiceError).details.option as string;
  }
  return undefined;
}

describe('parseOverride', () => {
  it('builds a limit rule with the burst defaulting to the quota and an id of pattern and scope', () => {
    const r = parseOverride(
      {
        pattern: 'tenant:acme',
        policy: 'rl.write',
        quota: 500,
        window: 60,
        ttlSeconds: 3600,
        reason: 'launch week',
      },
      NOW,
      'ops',
    );
    expect(r).toEqual({
      id: 'tenant:acme policy=rl.write',
      pattern: 'tenant:acme',
      policy: 'rl.write',
      effect: 'limit',
      quota: 500,
      burst: 500,
      window: 60,
      expiresAt: NOW + 3_600_000,
      reason: 'launch week',
      author: 'ops',
      createdAt: NOW,
    });
    expect(Object.isFrozen(r)).toBe(true);
  });

  it('builds unlimited and block rules; an ISO expiry is read', () => {
    expect(
      parseOverride({ pattern: 'ip:10.0.0.0/8', unlimited: true, reason: 'office' }, NOW, 'a').effect,
    ).toBe('unlimited');
    const b = parseOverride(
      { pattern: 'apikey:abc', block: 429, expiresAt: '2026-01-01T01:00:00Z', reason: 'abuse' },
      NOW,
      'a',
    );
    expect(b).toMatchObject({ effect: 'block', status: 429, expiresAt: NOW + 3_600_000 });
  });

  it.each([
    [{ pattern: '*', quota: 1, window: 1, reason: 'x' }, 'pattern'],
    [{ pattern: ':*', quota: 1, window: 1, reason: 'x' }, 'pattern'],
    [{ pattern: 'a*b', quota: 1, window: 1, reason: 'x' }, 'pattern'],
    [{ pattern: 'has space', quota: 1, window: 1, reason: 'x' }, 'pattern'],
    [{ pattern: 'k', quota: -1, window: 1, reason: 'x' }, 'quota'],
    [{ pattern: 'k', quota: 1, window: 0, reason: 'x' }, 'window'],
    [{ pattern: 'k', quota: 5, window: 1, burst: -2, reason: 'x' }, 'burst'],
    [{ pattern: 'k', quota: 1, window: 1, expiresAt: NOW - 1, reason: 'x' }, 'expiresAt'],
    [{ pattern: 'k', quota: 1, window: 1, expiresAt: 'yesterday', reason: 'x' }, 'expiresAt'],
    // A time without Z or an offset is read in the local time of whichever machine parses it; a date alone too.
    [{ pattern: 'k', block: 403, expiresAt: '2026-01-01T01:00:00', reason: 'x' }, 'expiresAt'],
    [{ pattern: 'k', block: 403, expiresAt: '2026-01-02', reason: 'x' }, 'expiresAt'],
    [{ pattern: 'k', block: 403, expiresAt: 'Thu, 01 Jan 2026 01:00:00', reason: 'x' }, 'expiresAt'],
    [{ pattern: 'k', block: 403, expiresAt: '2026-02-30T00:00:00Z', reason: 'x' }, 'expiresAt'],
    // Past what a Date can hold, or further off than an override may last (a 500 per request once stored).
    [{ pattern: 'k', block: 403, expiresAt: 1e17, reason: 'x' }, 'expiresAt'],
    [{ pattern: 'k', block: 429, expiresAt: '+275760-09-13T00:00:00.000Z', reason: 'x' }, 'expiresAt'],
    [{ pattern: 'k', quota: 1, window: 1, expiresAt: NOW + 367 * 86_400_000, reason: 'x' }, 'expiresAt'],
    [{ pattern: 'k', quota: 1, window: 1, ttlSeconds: 0, reason: 'x' }, 'ttlSeconds'],
    [{ pattern: 'k', quota: 1, window: 1, reason: '' }, 'reason'],
    [{ pattern: 'k', reason: 'x' }, 'quota'],
    [{ pattern: 'k', unlimited: true, block: 403, reason: 'x' }, 'quota'],
    [{ pattern: 'k', unlimited: 'yes', reason: 'x' }, 'unlimited'],
    [{ pattern: 'k', block: 404, reason: 'x' }, 'block'],
    [{ pattern: 'k', block: 429, reason: 'x' }, 'expiresAt'],
    [{ pattern: 'k', policy: 'p', tier: 't', unlimited: true, reason: 'x' }, 'tier'],
    [{ pattern: 'k', unlimited: true, reason: 'x', colour: 'red' }, 'body.colour'],
  ])('refuses %j naming %s', (input, field) => {
    expect(fieldOf(() => parseOverride(input, NOW, 'a'))).toBe(field);
  });

  it.each([
    ['ESC', 'paid \u001b[2J cleared'],
    ['BEL', 'ring\u0007'],
    ['CR', 'a\rb'],
    ['LF', 'first line\n2026-01-01T00:00:00.000Z root set ip:1.2.3.4: fake row'],
    ['TAB', 'a\tb'],
    ['DEL', 'a\u007fb'],
    ['C1 CSI', 'a\u009bb'],
    ['RLO', 'abuse \u202egnp.exe'],
    ['LRI', 'a\u2066b'],
  ])('refuses a reason holding %s, naming the character and its position', (_name, reason) => {
    let error: unknown;
    try {
      parseOverride({ pattern: 'k', block: 403, reason }, NOW, 'a');
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(SluiceError);
    expect((error as SluiceError).details.option).toBe('reason');
    expect((error as SluiceError).message).toMatch(/without control characters/);
  });

  it('keeps a reason of any printable text, non-ASCII included', () => {
    expect(parseOverride({ pattern: 'k', block: 403, reason: 'Müller, 東京 😀' }, NOW, 'a').reason).toBe(
      'Müller, 東京 😀',
    );
  });

  it('reads back a stored rule only when its end is a time a Date can hold', () => {
    const rule = parseOverride({ pattern: 'ip:192.0.2.1', block: 403, reason: 'x' }, NOW, 'a');
    expect(readStoredOverride(JSON.parse(JSON.stringify(rule)))).toEqual(rule);
    expect(readStoredOverride({ ...rule, expiresAt: NOW + 1000 })).toMatchObject({ expiresAt: NOW + 1000 });
    // Written before ends were bounded: applying it answered 500 to every request it matched.
    for (const expiresAt of [1e17, Number.POSITIVE_INFINITY, Number.NaN, -1e17])
      expect(readStoredOverride({ ...rule, expiresAt }), String(expiresAt)).toBeUndefined();
  });

  it('never accepts a pattern made only of separators and a star (it would match every key)', () => {
    fc.assert(
      fc.property(
        fc.string({ unit: fc.constantFrom(':', '*'), maxLength: 8 }).map((s) => `${s}*`),
        (p) => {
          expect(fieldOf(() => parseOverride({ pattern: p, unlimited: true, reason: 'x' }, NOW, 'a'))).toBe(
            'pattern',
          );
        },
      ),
    );
  });
});

describe('rule and history lists', () => {
  it('replaces a rule of the same id and drops expired ones', () => {
    const a = parseOverride({ pattern: 'k', quota: 1, window: 1, ttlSeconds: 10, reason: 'x' }, NOW, 'a');
    const b = parseOverride({ pattern: 'j', quota: 2, window: 1, reason: 'x' }, NOW, 'a');
    const a2 = parseOverride({ pattern: 'k', quota: 3, window: 1, reason: 'y' }, NOW + 20_000, 'a');
    expect(withOverride([a, b], a2, NOW + 20_000)).toEqual([b, a2]);
    expect(withOverride([a], b, NOW + 20_000)).toEqual([b]);
  });

  it('keeps the last changes in order', () => {
    let h: OverrideChange[] = [];
    for (let i = 0; i < OVERRIDE_HISTORY_LIMIT + 5; i++) {
      h = withChange(h, { action: 'set', id: `k${i}`, who: 'a', at: i, reason: `r${i}` });
    }
    expect(h).toHaveLength(OVERRIDE_HISTORY_LIMIT);
    expect(h[0].id).toBe('k5');
    expect(h.at(-1)?.reason).toBe(`r${OVERRIDE_HISTORY_LIMIT + 4}`);
  });
});
