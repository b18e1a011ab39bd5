import { isFullAt } from '../core/index.js';
import { lock, tryLock, unlock } from './group-lock.js';
import type { PolicyRegistry } from './policy-registry.js';
import { storedOf, unitsOf } from './slot-units.js';
import { C_EVICTIONS, C_FULL_DROPPED, H_SIZE, SLOT_INTS, type TableViews, WAYS } from './table-memory.js';

const NONE = -1;

/**
 * The operations on a shared table, for one thread. A key may live in either of two groups of 8 slots (chosen
 * by its hash); a caller locks every group its checks touch, in ascending order, before it reads or writes any
 * of their slots, which makes a decision over several policies atomic across threads and free of deadlock.
 * Eviction and sweeps never wait for a lock they do not hold: they try, and skip a busy group.
 */
export class SharedTable {
  readonly t: TableViews;
  readonly #policies: PolicyRegistry;
  readonly #mask: number;
  readonly #sample: number;
  /** Groups this thread holds, ascending. */
  #held = new Int32Array(8);
  #heldCount = 0;
  #extra = new Int32Array(16);
  #rng: number;

  constructor(table: TableViews, policies: PolicyRegistry, evictionSampleSize: number) {
    this.t = table;
    this.#policies = policies;
    this.#mask = table.groups - 1;
    this.#sample = evictionSampleSize;
    this.#rng = (Math.random() * 0xffffffff) >>> 0 || 1;
  }

  /** The first candidate group of a hash. */
  group1(lanes: Int32Array, at: number): number {
    return lanes[at] & this.#mask;
  }

  /** The second candidate group: another group whenever the table has two. */
  group2(lanes: Int32Array, at: number): number {
    const g1 = lanes[at] & this.#mask;
    const g2 = lanes[at + 1] & this.#mask;
    return g2 === g1 ? (g1 ^ 1) & this.#mask : g2;
  }

  /**
   * Locks the groups listed in `groups[0..n)` (duplicates allowed) in ascending order. Must be paired with
   * {@link SharedTable.unlockAll}, in a `finally`.
   */
  lockAll(groups: Int32Array, n: number): void {
    if (this.#held.length < n) this.#held = new Int32Array(n * 2);
    const held = this.#held;
    let count = 0;
    for (let i = 0; i < n; i++) {
      // Insertion into a sorted list without duplicates: n is a request's checks times two.
      const g = groups[i];
      let j = count;
      while (j > 0 && held[j - 1] > g) j--;
      if (j > 0 && held[j - 1] === g) continue;
      for (let k = count; k > j; k--) held[k] = held[k - 1];
      held[j] = g;
      count++;
    }
    this.#heldCount = count;
    for (let i = 0; i < count; i++) lock(this.t.locks, held[i]);
  }

  /** Releases what {@link SharedTable.lockAll} took. */
  unlockAll(): void {
    const held = this.#held;
    for (let i = this.#heldCount - 1; i >= 0; i--) unlock(this.t.locks, held[i]);
    this.#heldCount = 0;
  }

  /** The slot holding the key hashed in `lanes[at..at+3]` under policy `index`, or -1. Groups must be held. */
  find(index: number, lanes: Int32Array, at: number, g1: number, g2: number): number {
    const slot = this.#findIn(index + 1, lanes, at, g1);
    return slot !== NONE ? slot : this.#findIn(index + 1, lanes, at, g2);
  }

  #findIn(tag: number, lanes: Int32Array, at: number, g: number): number {
    const s = this.t.slots;
    const a = lanes[at];
    for (let slot = g * WAYS, end = slot + WAYS; slot < end; slot++) {
      const o = slot * SLOT_INTS;
      if (s[o] === tag && s[o + 1] === a && s[o + 2] === lanes[at + 1]) {
        if (s[o + 3] === lanes[at + 2] && s[o + 4] === lanes[at + 3]) return slot;
      }
    }
    return NONE;
  }

  /**
   * Takes a slot for a new key in the emptier of its two groups (held), evicting first when the table is at its
   * cap, or within the two groups when both are full. `pinned` lists the slots of the decision in progress.
   * Returns -1 only if every slot of both groups belongs to this decision; the bucket then goes unstored.
   */
  insert(
    index: number,
    lanes: Int32Array,
    at: number,
    g1: number,
    g2: number,
    now: number,
    pinned: Int32Array,
    pinnedCount: number,
  ): number {
    const t = this.t;
    // Over the cap by more than this key only after an eviction found nothing to take (see #evict): catch up.
    const over = Atomics.add(t.header, H_SIZE, 1) + 1 - t.maxTrackedKeys;
    for (let i = 0; i < over && i < 2; i++) this.#evict(now, pinned, pinnedCount);
    let slot = this.#emptier(g1, g2);
    if (slot === NONE) {
      slot = this.#victim(g1, g2, now, pinned, pinnedCount);
      if (slot === NONE) {
        Atomics.sub(t.header, H_SIZE, 1);
        return NONE;
      }
      this.release(slot);
      Atomics.add(t.header, H_SIZE, 1);
    }
    const s = t.slots;
    const o = slot * SLOT_INTS;
    s[o] = index + 1;
    s[o + 1] = lanes[at];
    s[o + 2] = lanes[at + 1];
    s[o + 3] = lanes[at + 2];
    s[o + 4] = lanes[at + 3];
    // Full: a concurrency bucket stores minus the units taken (slot-units.ts), so 0.
    const p = this.#policies.at(index);
    t.state[slot * 2] = storedOf(p, p.capacityUnits);
    t.state[slot * 2 + 1] = now;
    return slot;
  }

  /** Empties a slot (its group held). */
  release(slot: number): void {
    this.t.slots[slot * SLOT_INTS] = 0;
    Atomics.sub(this.t.header, H_SIZE, 1);
  }

  /** Forgets the key if held (groups held). */
  remove(index: number, lanes: Int32Array, at: number, g1: number, g2: number): void {
    const slot = this.find(index, lanes, at, g1, g2);
    if (slot !== NONE) this.release(slot);
  }

  /** Drops the full buckets of `count` groups from `from`, locking one group at a time; returns how many. */
  sweepGroups(from: number, count: number, now: number): number {
    const t = this.t;
    const end = Math.min(t.groups, from + count);
    let dropped = 0;
    for (let g = from; g < end; g++) {
      // An unlocked glance first: most groups of a sized table are empty, and a bucket inserted just after the
      // glance is not full anyway (a new bucket is stored only when something was taken).
      if (!this.#occupied(g)) continue;
      lock(t.locks, g);
      try {
        for (let slot = g * WAYS, last = slot + WAYS; slot < last; slot++) {
          if (this.#isFull(slot, now)) {
            this.release(slot);
            dropped++;
          }
        }
      } finally {
        unlock(t.locks, g);
      }
    }
    if (dropped > 0) Atomics.add(t.counters, C_FULL_DROPPED, BigInt(dropped));
    return dropped;
  }

  #occupied(g: number): boolean {
    const s = this.t.slots;
    for (let slot = g * WAYS, end = slot + WAYS; slot < end; slot++)
      if (s[slot * SLOT_INTS] !== 0) return true;
    return false;
  }

  #isFull(slot: number, now: number): boolean {
    const tag = this.t.slots[slot * SLOT_INTS];
    if (tag === 0) return false;
    const st = this.t.state;
    const p = this.#policies.at(tag - 1);
    return isFullAt(p, unitsOf(p, st[slot * 2]), st[slot * 2 + 1], now);
  }

  /**
   * A concurrency bucket with slots taken: nothing else counts its requests in flight, so eviction passes it over
   * (a rate bucket evicted starts again full, which the design allows; a forgotten count would admit more than
   * the limit). It goes like any bucket once its slots are back.
   */
  #holdsSlots(slot: number, now: number): boolean {
    const tag = this.t.slots[slot * SLOT_INTS];
    return tag !== 0 && this.#policies.at(tag - 1).concurrent > 0 && !this.#isFull(slot, now);
  }

  /** A free slot in the group with fewer occupied slots, or -1 when both are full. */
  #emptier(g1: number, g2: number): number {
    const s = this.t.slots;
    let free1 = NONE;
    let used1 = 0;
    let free2 = NONE;
    let used2 = 0;
    for (let w = 0; w < WAYS; w++) {
      const a = g1 * WAYS + w;
      if (s[a * SLOT_INTS] !== 0) used1++;
      else if (free1 === NONE) free1 = a;
      const b = g2 * WAYS + w;
      if (s[b * SLOT_INTS] !== 0) used2++;
      else if (free2 === NONE) free2 = b;
    }
    if (free1 === NONE) return free2;
    if (free2 === NONE) return free1;
    return used2 < used1 ? free2 : free1;
  }

  /**
   * Makes room for one key when the table is at its cap. The sample is the occupied slots of the groups this
   * decision holds, topped up from random groups that are free to lock; the first full bucket goes (no decision
   * changes), failing that the one used longest ago; never a concurrency bucket with slots taken. When nothing can
   * be taken (a tiny table whose every slot is in a decision under way or holds slots), the table stays over its
   * cap until the next insert or sweep brings it back.
   */
  #evict(now: number, pinned: Int32Array, pinnedCount: number): void {
    const t = this.t;
    let victim = NONE;
    let oldest = Number.POSITIVE_INFINITY;
    let sampled = 0;
    let extra = 0;
    const consider = (g: number): boolean => {
      for (let slot = g * WAYS, end = slot + WAYS; slot < end; slot++) {
        if (t.slots[slot * SLOT_INTS] === 0 || isPinned(slot, pinned, pinnedCount)) continue;
        if (this.#holdsSlots(slot, now)) continue;
        sampled++;
        if (this.#isFull(slot, now)) {
          victim = slot;
          return true;
        }
        const last = t.state[slot * 2 + 1];
        if (last < oldest) {
          oldest = last;
          victim = slot;
        }
      }
      return false;
    };
    let full = false;
    for (let i = 0; i < this.#heldCount && !full; i++) full = consider(this.#held[i]);
    for (let tries = 0; !full && sampled < this.#sample && tries < this.#sample * 4; tries++) {
      const g = this.#random() & this.#mask;
      if (this.#holds(g) || !tryLock(t.locks, g)) continue;
      if (extra === this.#extra.length) {
        unlock(t.locks, g);
        break;
      }
      this.#extra[extra++] = g;
      full = consider(g);
    }
    if (victim !== NONE) {
      Atomics.add(t.counters, full ? C_FULL_DROPPED : C_EVICTIONS, 1n);
      this.release(victim);
    }
    for (let i = 0; i < extra; i++) unlock(t.locks, this.#extra[i]);
  }

  /**
   * The slot to give up in two full groups: a full bucket first, else the oldest; never a pinned one or a
   * concurrency bucket with slots taken.
   */
  #victim(g1: number, g2: number, now: number, pinned: Int32Array, pinnedCount: number): number {
    let victim = NONE;
    let oldest = Number.POSITIVE_INFINITY;
    for (const g of [g1, g2]) {
      for (let slot = g * WAYS, end = slot + WAYS; slot < end; slot++) {
        if (isPinned(slot, pinned, pinnedCount) || this.#holdsSlots(slot, now)) continue;
        if (this.#isFull(slot, now)) {
          Atomics.add(this.t.counters, C_FULL_DROPPED, 1n);
          return slot;
        }
        const last = this.t.state[slot * 2 + 1];
        if (last < oldest) {
          oldest = last;
          victim = slot;
        }
      }
    }
    if (victim !== NONE) Atomics.add(this.t.counters, C_EVICTIONS, 1n);
    return victim;
  }

  #holds(g: number): boolean {
    for (let i = 0; i < this.#heldCount; i++) if (this.#held[i] === g) return true;
    return false;
  }

  /** xorshift32: cheap and allocation free; spreads samples, nothing secret. */
  #random(): number {
    let x = this.#rng;
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    this.#rng = x >>> 0;
    return this.#rng;
  }
}

function isPinned(slot: number, pinned: Int32Array, count: number): boolean {
  for (let i = 0; i < count; i++) if (pinned[i] === slot) return true;
  return false;
}
