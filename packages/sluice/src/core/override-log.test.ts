import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { OVERRIDE_LOG_LIMIT, type OverrideDelta, OverrideLog } from './override-log.js';

const delta = (id: string): OverrideDelta => ({ id, rule: undefined });

describe('OverrideLog', () => {
  it('gives the deltas between any two versions it still holds, in order, and undefined before them', () => {
    fc.assert(
      fc.property(fc.array(fc.nat(3), { minLength: 1, maxLength: 60 }), fc.nat(), fc.nat(), (sizes, a, b) => {
        const log = new OverrideLog(0);
        const all: { version: number; id: string }[] = [];
        sizes.forEach((n, i) => {
          const ds = Array.from({ length: n }, (_, j) => delta(`r${i}.${j}`));
          log.record(i + 1, ds);
          for (const d of ds) all.push({ version: i + 1, id: d.id });
        });
        const last = sizes.length;
        const held = a % (last + 1);
        const upTo = held + (b % (last - held + 1));
        const want = all.filter((e) => e.version > held && e.version <= upTo).map((e) => e.id);
        expect(log.since(held, upTo)?.map((d) => d.id)).toEqual(want);
        expect(log.since(last + 1, last + 1)).toBeUndefined();
        expect(log.since(held, last + 1)).toBeUndefined();
      }),
    );
  });

  it('stays bounded, forgets the oldest versions whole, and starts again after a jump', () => {
    const log = new OverrideLog(0);
    for (let v = 1; v <= OVERRIDE_LOG_LIMIT * 3; v++) log.record(v, [delta(`r${v}`)]);
    expect(log.since(0, 5)).toBeUndefined();
    const recent = log.since(OVERRIDE_LOG_LIMIT * 3 - 2, OVERRIDE_LOG_LIMIT * 3);
    expect(recent?.map((d) => d.id)).toEqual([
      `r${OVERRIDE_LOG_LIMIT * 3 - 1}`,
      `r${OVERRIDE_LOG_LIMIT * 3}`,
    ]);
    log.record(OVERRIDE_LOG_LIMIT * 5, [delta('after')]);
    expect(log.since(OVERRIDE_LOG_LIMIT * 3, OVERRIDE_LOG_LIMIT * 5)).toBeUndefined();
    expect(log.since(OVERRIDE_LOG_LIMIT * 5, OVERRIDE_LOG_LIMIT * 5)).toEqual([]);
  });
});
