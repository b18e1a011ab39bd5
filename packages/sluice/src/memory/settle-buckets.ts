import { type Check, nextLast, refill, settledUnits } from '../core/index.js';
import type { BucketTable } from './bucket-table.js';

const NO_PINS = new Int32Array(0);

/**
 * The memory store's settlement of a cost known after the response (core/settle-math.ts), in a file of its own so
 * that the store keeps to its decisions: each check's bucket refilled to `now`, then given tokens back (never above
 * the burst) or charged, into a bounded debt.
 *
 * @param t - the store's bucket table.
 * @param checks - the buckets to settle.
 * @param deltaTokens - a non-zero integer: tokens to take (positive) or give back (negative).
 * @param now - whole milliseconds.
 */
export function settleBuckets(
  t: BucketTable,
  checks: readonly Check[],
  deltaTokens: number,
  now: number,
): void {
  for (const { policy, key } of checks) {
    let slot = t.find(policy, key);
    // A missing bucket is full: a refund leaves it so, a charge stores it.
    if (slot < 0 && deltaTokens < 0) continue;
    let units = policy.capacityUnits;
    let last = now;
    if (slot >= 0) {
      const stored = t.last[slot];
      units = refill(policy, t.units[slot], now - stored);
      last = nextLast(policy, units, stored, now);
    } else slot = t.insert(policy, key, now, NO_PINS, 0);
    t.units[slot] = settledUnits(policy, units, deltaTokens);
    t.last[slot] = last;
  }
}
