import { type Check, nextLast, refill, settledUnits } from '../core/index.js';
import type { SharedTable } from './shared-table.js';

/** The shared store's scratch arrays of a prepared call: policy indexes, key lanes, lock groups, slots. */
export interface PreparedChecks {
  readonly indexes: Int32Array;
  readonly lanes: Int32Array;
  readonly groups: Int32Array;
  readonly slots: Int32Array;
}

/**
 * The shared store's settlement of a cost known after the response (core/settle-math.ts), called with every group
 * of the checks locked: each bucket refilled to `now`, then given tokens back (never above the burst) or charged,
 * into a bounded debt. A file of its own so that the store keeps to its decisions.
 *
 * @param t - the shared table.
 * @param checks - the buckets to settle, prepared (hashed and grouped) in `at`.
 * @param n - the number of checks.
 * @param deltaTokens - a non-zero integer: tokens to take (positive) or give back (negative).
 * @param now - whole milliseconds, read under the locks.
 */
export function settleLocked(
  t: SharedTable,
  checks: readonly Check[],
  n: number,
  at: PreparedChecks,
  deltaTokens: number,
  now: number,
): void {
  const st = t.t.state;
  const { indexes, lanes, groups, slots } = at;
  for (let i = 0; i < n; i++) {
    const policy = checks[i].policy;
    const g1 = groups[i * 2];
    const g2 = groups[i * 2 + 1];
    let slot = t.find(indexes[i], lanes, i * 4, g1, g2);
    slots[i] = slot;
    // A missing bucket is full: a refund leaves it so, a charge stores it.
    if (slot < 0 && deltaTokens < 0) continue;
    let units = policy.capacityUnits;
    let last = now;
    if (slot >= 0) {
      const stored = st[slot * 2 + 1];
      units = refill(policy, st[slot * 2], now - stored);
      last = nextLast(policy, units, stored, now);
    } else {
      slot = t.insert(indexes[i], lanes, i * 4, g1, g2, now, slots, n);
      slots[i] = slot;
      if (slot < 0) continue;
    }
    st[slot * 2] = settledUnits(policy, units, deltaTokens);
    st[slot * 2 + 1] = last;
  }
}
