import {
  type Check,
  type Decision,
  ErrorCode,
  type EvaluateMode,
  evaluate,
  msUntil,
  nextLast,
  type Policy,
  type RateLimitStore,
  refill,
  SingleDecision,
  SluiceError,
} from '../core/index.js';
import { hashKey } from './key-hash.js';
import { PolicyRegistry } from './policy-registry.js';
import { settleLocked } from './settle-locked.js';
import {
  type ResolvedSharedStoreOptions,
  resolveSharedStoreOptions,
  type SharedStoreOptions,
} from './shared-store-options.js';
import { SharedTable } from './shared-table.js';
import { storedOf, unitsOf } from './slot-units.js';
import {
  allocateTable,
  attachTable,
  C_EVICTIONS,
  C_FULL_DROPPED,
  C_SWEEPS,
  H_SEED,
  H_SIZE,
  H_SWEEPING,
  WAYS,
} from './table-memory.js';

/** Counters of the shared table, over every thread that uses it. */
export interface SharedStoreStats {
  /** Buckets held now, by all threads. */
  readonly trackedKeys: number;
  /** The cap. */
  readonly maxTrackedKeys: number;
  /** Buckets evicted to make room while not full (only these can change a later decision). */
  readonly evictions: number;
  /** Full buckets dropped, by eviction sampling or by sweeps (changes no decision). */
  readonly fullDropped: number;
  /** Completed sweeps. */
  readonly sweeps: number;
}

/**
 * Token buckets in a `SharedArrayBuffer`, shared by the worker threads of one process: the limits hold exactly
 * over all threads, with no message per decision. Create the store in one thread and hand its `table` to the
 * others (`new SharedStore({ table })`). The store keeps every promise of the memory store (a hard cap, sweeps of
 * full buckets, sampled eviction of full then oldest buckets, the core's exact arithmetic); see
 * docs/DECISIONS.md, "Shared bucket table", for the layout and the locking.
 *
 * Policies are told apart by their definition (name, sizes, shadow, queue, refill), not by object, so each
 * thread may build its own from the same configuration.
 *
 * @example
 * ```ts
 * const store = new SharedStore({ maxTrackedKeys: 100_000 });
 * new Worker(url, { workerData: { table: store.table } }); // there: new SharedStore({ table: workerData.table })
 * ```
 */
export class SharedStore implements RateLimitStore {
  readonly kind = 'shared';
  /** The resolved options. */
  readonly options: ResolvedSharedStoreOptions;
  /** The table, to pass to other threads. */
  readonly table: SharedArrayBuffer;
  readonly #t: SharedTable;
  readonly #policies: PolicyRegistry;
  readonly #seed: number;
  #lanes = new Int32Array(16);
  #groups = new Int32Array(8);
  #indexes = new Int32Array(4);
  #units = new Float64Array(4);
  #lasts = new Float64Array(4);
  #phases = new Float64Array(4);
  #slots = new Int32Array(4);
  #timer: ReturnType<typeof setInterval> | undefined;
  #closed = false;

  /**
   * @param options - see {@link SharedStoreOptions}.
   * @throws SluiceError `ERR_INVALID_OPTION` for an invalid option or a `table` that is not a shared table.
   */
  constructor(options: SharedStoreOptions = {}) {
    this.options = resolveSharedStoreOptions(options);
    const o = this.options;
    const views =
      o.table === undefined
        ? allocateTable(o.maxTrackedKeys, o.maxPolicies, (Math.random() * 2 ** 32) | 0)
        : attachTable(o.table);
    this.table = views.buffer;
    this.#seed = views.header[H_SEED];
    this.#policies = new PolicyRegistry(views);
    this.#t = new SharedTable(views, this.#policies, o.evictionSampleSize);
    if (o.sweepIntervalMs > 0) {
      this.#timer = setInterval(() => void this.sweepAsync(), o.sweepIntervalMs);
      (this.#timer as { unref?: () => void }).unref?.();
    }
  }

  /** Buckets held now, by all threads. */
  get size(): number {
    return Atomics.load(this.#t.t.header, H_SIZE);
  }

  /** A snapshot of the table's counters. */
  stats(): SharedStoreStats {
    const c = this.#t.t.counters;
    return {
      trackedKeys: this.size,
      maxTrackedKeys: this.#t.t.maxTrackedKeys,
      evictions: Number(Atomics.load(c, C_EVICTIONS)),
      fullDropped: Number(Atomics.load(c, C_FULL_DROPPED)),
      sweeps: Number(Atomics.load(c, C_SWEEPS)),
    };
  }

  decide(checks: readonly Check[], cost: number): Decision {
    if (checks.length === 1) return this.#one(checks[0].policy, checks[0].key, cost, 'decide');
    return this.#run(checks, cost, 'decide');
  }

  /**
   * The one-policy fast path. With `into`, the decision is written into that instance and no object is
   * allocated; it stays valid until `into` is reused.
   */
  decideOne(policy: Policy, key: string, cost: number, into?: SingleDecision): SingleDecision {
    return this.#one(policy, key, cost, 'decide', into);
  }

  reserve(checks: readonly Check[], cost: number): Decision {
    if (checks.length === 1) return this.#one(checks[0].policy, checks[0].key, cost, 'reserve');
    return this.#run(checks, cost, 'reserve');
  }

  peek(checks: readonly Check[], cost: number): Decision {
    if (checks.length === 1) return this.#one(checks[0].policy, checks[0].key, cost, 'peek');
    return this.#run(checks, cost, 'peek');
  }

  refund(checks: readonly Check[], cost: number): void {
    const n = this.#prepare(checks);
    const now = this.#now();
    const t = this.#t;
    const st = t.t.state;
    t.lockAll(this.#groups, n * 2);
    try {
      for (let i = 0; i < n; i++) {
        const policy = checks[i].policy;
        const slot = t.find(
          this.#indexes[i],
          this.#lanes,
          i * 4,
          this.#groups[i * 2],
          this.#groups[i * 2 + 1],
        );
        if (slot < 0) continue; // a missing bucket is full: nothing to return
        const last = st[slot * 2 + 1];
        const units = refill(policy, unitsOf(policy, st[slot * 2]), now - last);
        st[slot * 2] = storedOf(policy, Math.min(units + cost * policy.unitsPerToken, policy.capacityUnits));
        st[slot * 2 + 1] = nextLast(policy, units, last, now);
      }
    } finally {
      t.unlockAll();
    }
  }

  /**
   * Settles a cost known after the response (core/settle-math.ts), under the checks' group locks: a negative delta
   * gives tokens back, never above the burst; a positive one takes them, into a bounded debt when they lack.
   */
  settle(checks: readonly Check[], deltaTokens: number): void {
    const n = this.#prepare(checks);
    if (deltaTokens === 0) return;
    const t = this.#t;
    t.lockAll(this.#groups, n * 2);
    try {
      // Read under the lock: a thread that waited must not refill from a time before the holder's write.
      const at = { indexes: this.#indexes, lanes: this.#lanes, groups: this.#groups, slots: this.#slots };
      settleLocked(t, checks, n, at, deltaTokens, this.#now());
    } finally {
      t.unlockAll();
    }
  }

  reset(checks: readonly Check[]): void {
    const n = this.#prepare(checks);
    const t = this.#t;
    t.lockAll(this.#groups, n * 2);
    try {
      for (let i = 0; i < n; i++) {
        t.remove(this.#indexes[i], this.#lanes, i * 4, this.#groups[i * 2], this.#groups[i * 2 + 1]);
      }
    } finally {
      t.unlockAll();
    }
  }

  /** Drops every bucket that is full now, in one pass over the whole table (all threads' buckets). */
  sweep(): number {
    if (!this.#beginSweep()) return 0;
    let dropped = 0;
    try {
      const step = this.#groupsPerSlice();
      for (let from = 0; from < this.#t.t.groups; from += step) {
        dropped += this.#t.sweepGroups(from, step, this.#now());
      }
    } finally {
      this.#endSweep();
    }
    return dropped;
  }

  /**
   * Drops full buckets in slices of `sweepSliceSize`, yielding to the event loop between slices. One sweep runs
   * at a time over the table: a store whose turn finds another thread sweeping returns 0 at once.
   */
  async sweepAsync(): Promise<number> {
    if (this.#closed || !this.#beginSweep()) return 0;
    let dropped = 0;
    try {
      const step = this.#groupsPerSlice();
      for (let from = 0; from < this.#t.t.groups && !this.#closed; from += step) {
        dropped += this.#t.sweepGroups(from, step, this.#now());
        await new Promise<void>((resolve) => setImmediate(resolve));
      }
    } finally {
      this.#endSweep();
    }
    return dropped;
  }

  /** Stops this thread's sweeper and detaches; the table and its buckets stay for the other threads. */
  close(): void {
    this.#closed = true;
    if (this.#timer !== undefined) clearInterval(this.#timer);
    this.#timer = undefined;
  }

  #beginSweep(): boolean {
    return Atomics.compareExchange(this.#t.t.header, H_SWEEPING, 0, 1) === 0;
  }

  #endSweep(): void {
    Atomics.add(this.#t.t.counters, C_SWEEPS, 1n);
    Atomics.store(this.#t.t.header, H_SWEEPING, 0);
  }

  #groupsPerSlice(): number {
    return Math.max(1, Math.floor(this.options.sweepSliceSize / WAYS));
  }

  #now(): number {
    // Whole milliseconds keep the arithmetic in integers; flooring both ends loses no refill over time.
    return Math.floor(this.options.clock.now());
  }

  /**
   * Registers each check's policy and hashes its key, before any group is locked (the policy list has a lock
   * of its own, never taken while holding a group). Returns the number of checks.
   */
  #prepare(checks: readonly Check[]): number {
    if (this.#closed) throw new SluiceError(ErrorCode.StoreClosed, 'the shared store is closed');
    const n = checks.length;
    if (n * 4 > this.#lanes.length) {
      this.#lanes = new Int32Array(n * 8);
      this.#groups = new Int32Array(n * 4);
      this.#indexes = new Int32Array(n * 2);
      this.#units = new Float64Array(n * 2);
      this.#lasts = new Float64Array(n * 2);
      this.#phases = new Float64Array(n * 2);
      this.#slots = new Int32Array(n * 2);
    }
    for (let i = 0; i < n; i++) {
      const index = this.#policies.indexOf(checks[i].policy);
      this.#indexes[i] = index;
      hashKey(checks[i].key, index + 1, this.#seed, this.#lanes, i * 4);
      this.#groups[i * 2] = this.#t.group1(this.#lanes, i * 4);
      this.#groups[i * 2 + 1] = this.#t.group2(this.#lanes, i * 4);
    }
    return n;
  }

  /** The one-policy path: the arithmetic of `evaluate` for n = 1, under the key's two group locks. */
  #one(policy: Policy, key: string, cost: number, mode: EvaluateMode, into?: SingleDecision): SingleDecision {
    if (this.#closed) throw new SluiceError(ErrorCode.StoreClosed, 'the shared store is closed');
    const index = this.#policies.indexOf(policy);
    const lanes = this.#lanes;
    hashKey(key, index + 1, this.#seed, lanes, 0);
    const t = this.#t;
    const g1 = t.group1(lanes, 0);
    const g2 = t.group2(lanes, 0);
    const groups = this.#groups;
    groups[0] = g1;
    groups[1] = g2;
    const st = t.t.state;
    t.lockAll(groups, 2);
    try {
      // Read under the lock: a thread that waited must not refill from a time before the holder's write.
      const now = this.#now();
      let slot = t.find(index, lanes, 0, g1, g2);
      let before: number;
      let last = now;
      if (slot < 0) before = policy.capacityUnits;
      else {
        const stored = st[slot * 2 + 1];
        const held = unitsOf(policy, st[slot * 2]);
        before = now > stored ? refill(policy, held, now - stored) : held;
        last = nextLast(policy, before, stored, now);
      }
      const phase = now - last;
      const need = cost * policy.unitsPerToken;
      let limited = true;
      let delay = 0;
      if (cost > policy.burst) limited = true;
      else if (before >= need) limited = false;
      else if (mode === 'reserve' && policy.queue !== undefined && need - before <= policy.debtUnits) {
        delay = msUntil(policy, before - need, 0, phase);
        limited = delay > policy.queue.maxWaitMs;
      }
      const after = !limited && mode !== 'peek' ? before - need : before;
      if (mode !== 'peek') {
        if (slot >= 0) {
          st[slot * 2] = storedOf(policy, after);
          st[slot * 2 + 1] = last;
        } else if (after < policy.capacityUnits) {
          slot = t.insert(index, lanes, 0, g1, g2, now, this.#slots, 0);
          if (slot >= 0) st[slot * 2] = storedOf(policy, after);
        }
      }
      const delayMs = limited ? 0 : delay;
      return into === undefined
        ? new SingleDecision(policy, key, cost, before, after, limited, delayMs, phase)
        : into.set(policy, key, cost, before, after, limited, delayMs, phase);
    } finally {
      t.unlockAll();
    }
  }

  /** Several policies, all or nothing: every group of every check is locked (ascending) for the whole decision. */
  #run(checks: readonly Check[], cost: number, mode: EvaluateMode): Decision {
    const n = this.#prepare(checks);
    const t = this.#t;
    const st = t.t.state;
    const units = this.#units;
    const lasts = this.#lasts;
    const phases = this.#phases;
    const slots = this.#slots;
    const lanes = this.#lanes;
    const groups = this.#groups;
    t.lockAll(groups, n * 2);
    try {
      const now = this.#now();
      for (let i = 0; i < n; i++) {
        const policy = checks[i].policy;
        const slot = t.find(this.#indexes[i], lanes, i * 4, groups[i * 2], groups[i * 2 + 1]);
        slots[i] = slot;
        if (slot < 0) {
          units[i] = policy.capacityUnits;
          lasts[i] = now;
        } else {
          const last = st[slot * 2 + 1];
          const held = unitsOf(policy, st[slot * 2]);
          units[i] = now > last ? refill(policy, held, now - last) : held;
          lasts[i] = nextLast(policy, units[i], last, now);
        }
        phases[i] = now - lasts[i];
      }
      const decision = evaluate(checks, units, cost, mode, phases);
      if (mode === 'peek') return decision;
      for (let i = 0; i < n; i++) {
        let slot = slots[i];
        if (slot < 0) {
          // A full bucket that stays full need not be stored: it decides like a missing one.
          if (units[i] >= checks[i].policy.capacityUnits) continue;
          slot = t.insert(this.#indexes[i], lanes, i * 4, groups[i * 2], groups[i * 2 + 1], now, slots, n);
          slots[i] = slot;
          if (slot < 0) continue;
        }
        st[slot * 2] = storedOf(checks[i].policy, units[i]);
        st[slot * 2 + 1] = lasts[i];
      }
      return decision;
    } finally {
      t.unlockAll();
    }
  }
}
