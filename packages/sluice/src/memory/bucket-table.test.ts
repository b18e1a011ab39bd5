import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { definePolicy } from '../core/index.js';
import { BucketTable } from './bucket-table.js';

const POLICIES = [0, 1, 2, 3].map((i) => definePolicy({ name: `p${i}`, quota: 10, window: 60 }));
const KEYS = ['a', 'b', 'c', 'ip:192.0.2.1', 'tenant:x:client:y'];

const op = fc.oneof(
  fc.record({ kind: fc.constant('insert' as const), p: fc.nat(3), k: fc.nat(4), full: fc.boolean() }),
  fc.record({ kind: fc.constant('remove' as const), p: fc.nat(3), k: fc.nat(4) }),
  fc.record({
    kind: fc.constant('sweep' as const),
    from: fc.nat(12),
    count: fc.integer({ min: 1, max: 12 }),
  }),
  fc.record({ kind: fc.constant('clear' as const) }),
);

describe('bucket table', () => {
  it('finds exactly the buckets held, whatever order keys and policies come and go in', () => {
    fc.assert(
      fc.property(fc.array(op, { maxLength: 80 }), fc.integer({ min: 1, max: 12 }), (ops, cap) => {
        const t = new BucketTable(cap, 4);
        // The model: which (policy, key) pairs the table holds, and whether each bucket is full.
        const held = new Map<string, boolean>();
        const id = (p: number, k: number) => `${p}/${k}`;
        for (const o of ops) {
          if (o.kind === 'insert') {
            if (t.find(POLICIES[o.p], KEYS[o.k]) >= 0) continue;
            const before = t.size;
            const slot = t.insert(POLICIES[o.p], KEYS[o.k], 0, new Int32Array(0), 0);
            // A bucket that is not full holds less than its capacity; a sweep at time 0 drops only full ones.
            if (!o.full) t.units[slot] = 0;
            if (before >= cap) {
              // At the cap one bucket made room: the model learns which from the table.
              for (const [k] of held) {
                const [p, key] = k.split('/').map(Number);
                if (t.find(POLICIES[p], KEYS[key]) < 0) held.delete(k);
              }
            }
            held.set(id(o.p, o.k), o.full);
          } else if (o.kind === 'remove') {
            t.remove(POLICIES[o.p], KEYS[o.k]);
            held.delete(id(o.p, o.k));
          } else if (o.kind === 'sweep') {
            t.sweepSlice(o.from, o.count, 0);
            for (const [k, full] of held) {
              const [p, key] = k.split('/').map(Number);
              if (full && t.find(POLICIES[p], KEYS[key]) < 0) held.delete(k);
            }
          } else {
            t.clear();
            held.clear();
          }
          expect(t.size).toBe(held.size);
          expect(t.size).toBeLessThanOrEqual(cap);
          for (let p = 0; p < POLICIES.length; p++) {
            for (let k = 0; k < KEYS.length; k++) {
              const slot = t.find(POLICIES[p], KEYS[k]);
              expect(slot >= 0, `${p}/${k}`).toBe(held.has(id(p, k)));
              if (slot >= 0) expect(t.keys[slot]).toBe(KEYS[k]);
            }
          }
        }
      }),
      { numRuns: 2000 },
    );
  });

  it('never drops a bucket that is not full in a sweep', () => {
    const t = new BucketTable(16, 4);
    for (const p of POLICIES) {
      const slot = t.insert(p, 'a', 0, new Int32Array(0), 0);
      if (p !== POLICIES[1]) t.units[slot] = 0;
    }
    expect(t.sweepSlice(0, 16, 0)).toBe(1);
    expect(POLICIES.map((p) => t.find(p, 'a') >= 0)).toEqual([true, false, true, true]);
  });
});
