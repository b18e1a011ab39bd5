import {
  type Check,
  type Clock,
  type Decision,
  ErrorCode,
  type EvaluateMode,
  evaluate,
  ManyDecision,
  nextLast,
  type Policy,
  type RateLimitStore,
  refill,
  SingleDecision,
  SluiceError,
} from '../core/index.js';
import { BucketTable } from './bucket-table.js';
import {
  type MemoryStoreOptions,
  type ResolvedMemoryStoreOptions,
  resolveMemoryStoreOptions,
} from './memory-store-options.js';
import { PlaceHints } from './place-hints.js';
import { settleBuckets } from './settle-buckets.js';

const NO_PINS = new Int32Array(0);
/** Decisions given back that a store keeps for reuse, of each kind: a replay gives back a batch's at a time. */
const MAX_FREE = 256;

/** Counters a metrics exporter can read without touching the hot path. */
export interface MemoryStoreStats {
  /** Buckets held now. */
  readonly trackedKeys: number;
  /** The cap. */
  readonly maxTrackedKeys: number;
  /** Buckets evicted to make room (not full when evicted: only these can change a later decision). */
  readonly evictions: number;
  /** Full buckets dropped, by eviction sampling or by the sweeper (changes no decision). */
  readonly fullDropped: number;
  /** Completed sweeps. */
  readonly sweeps: number;
}

/**
 * Token buckets in process memory, bounded by `maxTrackedKeys` whatever the number of distinct keys.
 *
 * Buckets live in typed arrays (a struct of arrays), found through one `Map` per policy, so a decision for a
 * known key allocates no bucket and builds no key string. A full bucket decides exactly like a missing one, which
 * is why the sweeper may drop full buckets at any time and why eviction prefers them. Limits held here are per
 * process; use the Redis store for a fleet.
 *
 * @example
 * ```ts
 * const store = new MemoryStore({ maxTrackedKeys: 100_000 });
 * const limiter = new Limiter({ policies: [{ name: 'rl.write', quota: 120, window: 60, burst: 30 }], store });
 * ```
 */
export class MemoryStore implements RateLimitStore {
  readonly kind = 'memory';
  /** The resolved options. */
  readonly options: ResolvedMemoryStoreOptions;
  readonly #table: BucketTable;
  readonly #clock: Clock;
  #units = new Float64Array(4);
  #lasts = new Float64Array(4);
  #phases = new Float64Array(4);
  #slots = new Int32Array(4);
  #heads = new Int32Array(4);
  #timer: ReturnType<typeof setInterval> | undefined;
  #sweeping = false;
  #closed = false;
  // biome-ignore lint/correctness/noUnusedPrivateClassMembers: written by prefetch so that its reads are kept
  #prefetched = 0;
  /** The places the last run of prefetch calls found, for the decisions that follow (D-G72). */
  readonly #hints = new PlaceHints();
  /** Decisions given back through {@link MemoryStore.recycle}, written over by the next ones (D-G171). */
  readonly #freeMany: ManyDecision[] = [];
  readonly #freeSingle: SingleDecision[] = [];

  /**
   * @param options - see {@link MemoryStoreOptions}.
   * @throws SluiceError `ERR_INVALID_OPTION` for an invalid option.
   */
  constructor(options: MemoryStoreOptions = {}) {
    this.options = resolveMemoryStoreOptions(options);
    this.#clock = this.options.clock;
    this.#table = new BucketTable(this.options.maxTrackedKeys, this.options.evictionSampleSize);
    if (this.options.sweepIntervalMs > 0) {
      this.#timer = setInterval(() => void this.sweepAsync(), this.options.sweepIntervalMs);
      // One timer for the whole store, never one per key; it must not keep a process alive.
      (this.#timer as { unref?: () => void }).unref?.();
    }
  }

  /** Buckets held now. */
  get size(): number {
    return this.#table.size;
  }

  /** A snapshot of the store's counters. */
  stats(): MemoryStoreStats {
    const t = this.#table;
    return {
      trackedKeys: t.size,
      maxTrackedKeys: this.options.maxTrackedKeys,
      evictions: t.evictions,
      fullDropped: t.fullDropped,
      sweeps: t.sweeps,
    };
  }

  decide(checks: readonly Check[], cost: number): Decision {
    if (checks.length === 1) {
      const free = this.#freeSingle;
      return this.decideOne(checks[0].policy, checks[0].key, cost, free.length > 0 ? free.pop() : undefined);
    }
    return this.#run(checks, cost, 'decide');
  }

  /**
   * Gives back a decision this store made that its caller will never read again (nor anything it handed the
   * decision to): a later decision is written into it instead of a new object, so that a caller that gives back
   * every decision it is done with (a log replay) decides a known key without allocating. A decision given back
   * twice is kept once; any other value is ignored. Reading a decision after giving it back reads another one.
   */
  recycle(d: Decision): void {
    // A decision in use has a cost of at least 1: 0 marks one already given back.
    if (d.cost === 0) return;
    if (d instanceof ManyDecision) {
      if (this.#freeMany.length >= MAX_FREE) return;
      d.cost = 0;
      this.#freeMany.push(d);
    } else if (d instanceof SingleDecision) {
      if (this.#freeSingle.length >= MAX_FREE) return;
      d.cost = 0;
      this.#freeSingle.push(d);
    }
  }

  /**
   * The one-policy fast path: the arithmetic of `evaluate` for one check in decide mode, with one allocation
   * (the decision). With `into`, the decision is written into that instance and no object is allocated; it
   * stays valid until `into` is reused.
   */
  decideOne(policy: Policy, key: string, cost: number, into?: SingleDecision): SingleDecision {
    // Kept to decide mode only (reserve and peek take the general path): a small body is what lets V8 inline
    // it into the caller, which measured 0.87x against 0.94x of a naive Map bucket through limiter.check.
    if (this.#closed) this.#open();
    const t = this.#table;
    const now = Math.floor(this.#clock.now());
    let slot = t.find(policy, key);
    let before: number;
    // The bucket's time after the refill: `now` for a continuous policy, the current step's start for a stepped one.
    let last = now;
    if (slot < 0) before = policy.capacityUnits;
    else {
      const stored = t.last[slot];
      before = now > stored ? refill(policy, t.units[slot], now - stored) : t.units[slot];
      last = nextLast(policy, before, stored, now);
    }
    const phase = now - last;
    const need = cost * policy.unitsPerToken;
    const limited = cost > policy.burst || before < need;
    const after = limited ? before : before - need;
    if (slot >= 0) {
      t.units[slot] = after;
      t.last[slot] = last;
    } else if (after < policy.capacityUnits) {
      slot = t.insert(policy, key, now, NO_PINS, 0);
      t.units[slot] = after;
    }
    return into === undefined
      ? new SingleDecision(policy, key, cost, before, after, limited, 0, phase)
      : into.set(policy, key, cost, before, after, limited, 0, phase);
  }

  /**
   * Reads the buckets of `key` (every policy's) without changing anything. A caller about to decide many keys in a
   * row, such as a log replay deciding a batch of lines, calls it for each key first: the processor then fetches
   * the keys' buckets from memory side by side, where one decision after another waits for each key's in turn,
   * and the decisions that follow (in the same order) take each key's place from this call instead of looking it
   * up again. Decisions are the same with or without it.
   *
   * @param key - a bucket key, as the checks of a later decision will name it.
   * @param place - what an earlier call returned for `key`, and `placesMoved` the value of
   *   {@link MemoryStore.placesMoved} just after it: while that count is unchanged the key is not looked up again.
   *   A place read before the count changed is ignored.
   * @returns the key's place in the table (its first bucket), or -1 while it has none.
   */
  prefetch(key: string, place = -1, placesMoved = -1): number {
    const t = this.#table;
    const head = place >= 0 && placesMoved === t.placesMoved && t.keys[place] === key ? place : t.head(key);
    let sum = 0;
    // The policy of each bucket too: the decision reads it first, to find the bucket of each of its policies.
    for (let slot = head; slot >= 0; slot = t.next[slot])
      sum += t.units[slot] + t.last[slot] + t.policyOf[slot];
    // Kept, so that the reads are not optimised away.
    this.#prefetched = sum;
    this.#hints.record(t, key, head);
    return head;
  }

  /**
   * The place of `key` now (its first bucket, as {@link MemoryStore.prefetch} returns it), or -1 while it has none:
   * a caller that keeps places asks it right after a decision that may have given the key its first buckets.
   */
  placeOf(key: string): number {
    return this.#table.head(key);
  }

  /**
   * Counts the times a key's place (see {@link MemoryStore.prefetch}) changed or went: an eviction, a sweep, a
   * reset or a close that took a key's first bucket. A place stays its key's while this count is unchanged.
   */
  get placesMoved(): number {
    return this.#table.placesMoved;
  }

  reserve(checks: readonly Check[], cost: number): Decision {
    return this.#run(checks, cost, 'reserve');
  }

  peek(checks: readonly Check[], cost: number): Decision {
    return this.#run(checks, cost, 'peek');
  }

  refund(checks: readonly Check[], cost: number): void {
    this.#open();
    const now = this.#now();
    const t = this.#table;
    for (const c of checks) {
      const slot = t.find(c.policy, c.key);
      if (slot < 0) continue; // a missing bucket is full: nothing to return
      // The bucket's policy now: a slot admitted before a reload goes back under the new limit (D-G186).
      const policy = t.policyAt(slot);
      const last = t.last[slot];
      const units = refill(policy, t.units[slot], now - last);
      t.units[slot] = Math.min(units + cost * policy.unitsPerToken, policy.capacityUnits);
      t.last[slot] = nextLast(policy, units, last, now);
    }
  }

  /**
   * Settles a cost known after the response (core/settle-math.ts): a negative delta gives tokens back, never above
   * the burst; a positive one takes them, into a bounded debt when the bucket lacks them.
   */
  settle(checks: readonly Check[], deltaTokens: number): void {
    this.#open();
    if (deltaTokens !== 0) settleBuckets(this.#table, checks, deltaTokens, this.#now());
  }

  reset(checks: readonly Check[]): void {
    this.#open();
    for (const { policy, key } of checks) this.#table.remove(policy, key);
  }

  /**
   * Drops every bucket that is full now, in one pass. Use {@link MemoryStore.sweepAsync} on a large table to
   * keep the event loop responsive; this synchronous form is for tests and small tables.
   *
   * @returns the number of buckets dropped.
   */
  sweep(): number {
    const t = this.#table;
    let dropped = 0;
    for (let from = 0; from < t.highWater; from += this.options.sweepSliceSize) {
      dropped += t.sweepSlice(from, this.options.sweepSliceSize, this.#now());
    }
    t.sweeps++;
    return dropped;
  }

  /**
   * Drops full buckets in slices of `sweepSliceSize`, yielding to the event loop between slices so that no
   * step blocks for more than about a millisecond, even at a million keys.
   *
   * @returns the number of buckets dropped.
   */
  async sweepAsync(): Promise<number> {
    if (this.#sweeping || this.#closed) return 0;
    this.#sweeping = true;
    const t = this.#table;
    let dropped = 0;
    try {
      for (let from = 0; from < t.highWater && !this.#closed; from += this.options.sweepSliceSize) {
        dropped += t.sweepSlice(from, this.options.sweepSliceSize, this.#now());
        await yieldToEventLoop();
      }
      t.sweeps++;
    } finally {
      this.#sweeping = false;
    }
    return dropped;
  }

  /** One sweep slice, for benchmarks that time a slice: examines `count` slots from `from`. */
  sweepSlice(from: number, count: number): number {
    return this.#table.sweepSlice(from, count, this.#now());
  }

  close(): void {
    this.#closed = true;
    if (this.#timer !== undefined) clearInterval(this.#timer);
    this.#timer = undefined;
    this.#table.clear();
  }

  #open(): void {
    if (this.#closed) throw new SluiceError(ErrorCode.StoreClosed, 'the memory store is closed');
  }

  #now(): number {
    // Whole milliseconds keep the arithmetic in integers; flooring both ends loses no refill over time.
    return Math.floor(this.#clock.now());
  }

  #run(checks: readonly Check[], cost: number, mode: EvaluateMode): Decision {
    this.#open();
    const n = checks.length;
    if (n > this.#units.length) {
      this.#units = new Float64Array(n * 2);
      this.#lasts = new Float64Array(n * 2);
      this.#phases = new Float64Array(n * 2);
      this.#slots = new Int32Array(n * 2);
      this.#heads = new Int32Array(n * 2);
    }
    const units = this.#units;
    const lasts = this.#lasts;
    const phases = this.#phases;
    const slots = this.#slots;
    const heads = this.#heads;
    const t = this.#table;
    const now = this.#now();
    const hints = this.#hints;
    const hinted = hints.held;
    hints.taken();
    // The checks of one decision mostly share a key (a tier's minute and hour, an endpoint rule keyed by the same
    // caller): its chain of buckets is looked up once.
    let chainKey: string | undefined;
    let head = -1;
    for (let i = 0; i < n; i++) {
      const { policy, key } = checks[i];
      if (i === 0 || key !== chainKey) {
        chainKey = key;
        head = hinted ? hints.placeOf(t, key) : t.head(key);
      }
      const slot = t.findFrom(head, policy);
      slots[i] = slot;
      heads[i] = head;
      if (slot < 0) {
        units[i] = policy.capacityUnits;
        lasts[i] = now;
        // Refused here, before anything is taken, rather than half way through writing the buckets back.
        if (mode !== 'peek') t.ensurePolicy(policy);
      } else {
        const last = t.last[slot];
        units[i] = now > last ? refill(policy, t.units[slot], now - last) : t.units[slot];
        lasts[i] = nextLast(policy, units[i], last, now);
      }
      phases[i] = now - lasts[i];
    }
    // The outcomes of a decision over several policies are built only when read (most callers read `allowed`).
    const decision =
      n > ManyDecision.MAX_CHECKS
        ? evaluate(checks, units, cost, mode, phases)
        : this.#freeMany.length > 0
          ? (this.#freeMany.pop() as ManyDecision).set(checks, units, cost, mode, phases)
          : new ManyDecision(checks, units, cost, mode, phases);
    if (mode === 'peek') return decision;
    // The keys' first slots found above stay true while buckets are only added: an insert that may evict (the
    // table at its cap) ignores the hint and looks the key up.
    for (let i = 0; i < n; i++) {
      const p = checks[i].policy;
      let slot = slots[i];
      if (slot < 0) {
        // A full bucket that stays full need not be stored: it decides like a missing one.
        if (units[i] >= p.capacityUnits) continue;
        const key = checks[i].key;
        const hint = heads[i];
        slot = t.insert(p, key, now, slots, n, hint);
        slots[i] = slot;
        // A key's first bucket heads its chain: the key's later checks insert behind it.
        if (hint === -1) for (let j = i + 1; j < n; j++) if (checks[j].key === key) heads[j] = slot;
      }
      t.units[slot] = units[i];
      t.last[slot] = lasts[i];
    }
    return decision;
  }
}

/** Lets pending I/O run between sweep slices; setImmediate where it exists, else a macrotask. */
function yieldToEventLoop(): Promise<void> {
  return new Promise((resolve) => {
    const g = globalThis as { setImmediate?: (cb: () => void) => void };
    if (g.setImmediate) g.setImmediate(resolve);
    else setTimeout(resolve, 0);
  });
}
