import { ErrorCode, isFullAt, type Policy, SluiceError } from '../core/index.js';

const NONE = -1;
/** The `insert` hint saying that the key's first slot is not known: `insert` looks it up. */
const UNKNOWN_HEAD = -2;
/** Up to this many policies, a policy's number is found by comparing, not through the map. */
const FEW_POLICIES = 16;
/** Policies one table can tell apart: a slot names its policy in 16 bits. */
export const MAX_POLICIES = 65_535;

/**
 * Bucket state as a struct of arrays: slot i holds `units[i]` at time `last[i]` for key `keys[i]` of the policy
 * numbered `policyOf[i]`, and `next[i]` is the next slot of the same key (-1 for none). One Map finds a key's
 * first slot and the key's other slots (one per policy that has a bucket for it) follow in that chain: a request
 * checking two or three policies of the same key (a tier's minute and hour, an endpoint rule keyed by the same
 * caller) looks the key up once, and a key's buckets come and go without a map write after its first. Keys of
 * different policies never share a bucket and no combined key string is built per decision. The arrays grow by
 * doubling up to the cap and are reused through a free list, so steady traffic allocates nothing.
 */
export class BucketTable {
  units: Float64Array;
  last: Float64Array;
  /** Per slot: the policy's number (16 bits; a pointer per slot would cost 6 bytes more per key). */
  policyOf: Uint16Array;
  /** Per slot: the next slot of the same key, or -1; for a free slot, the next free slot. */
  next: Int32Array;
  /** Per slot: the key, or `undefined` for a free slot. */
  keys: (string | undefined)[];
  /** Slots ever used; slots below it are occupied or on the free list. */
  highWater = 0;
  size = 0;
  evictions = 0;
  fullDropped = 0;
  sweeps = 0;
  /**
   * Times a key's first slot changed or went (a release of a first slot, a clear): a first slot read from
   * {@link BucketTable.head} is still the key's while this count is unchanged.
   */
  placesMoved = 0;
  /** Keys given a first slot: a key found without one may have one once this count changed. */
  placesAdded = 0;
  readonly #cap: number;
  readonly #sample: number;
  /** Head of the free list; a free slot's `next` holds the next free slot, so the list costs no memory. */
  #freeHead = NONE;
  /** A key's first slot. */
  #heads = new Map<string, number>();
  #policyIndex = new Map<Policy, number>();
  #policies: Policy[] = [];
  /**
   * A concurrency policy's number by its name: a reload that changes its limit makes a new policy object whose
   * buckets are the old one's, so that the requests in flight stay counted (D-G186).
   */
  #slotsIndex = new Map<string, number>();
  #rng = 0x9e3779b9;

  constructor(cap: number, sample: number) {
    this.#cap = cap;
    this.#sample = sample;
    const initial = Math.min(cap, 1024);
    this.units = new Float64Array(initial);
    this.last = new Float64Array(initial);
    this.policyOf = new Uint16Array(initial);
    this.next = new Int32Array(initial);
    this.keys = new Array(initial);
  }

  /** The slot of `key` under `policy`, or -1. */
  find(policy: Policy, key: string): number {
    return this.findFrom(this.head(key), policy);
  }

  /**
   * The first slot of a key's chain, or -1: a decision over several policies of one key looks it up once and
   * finds each policy's slot with {@link BucketTable.findFrom}.
   */
  head(key: string): number {
    const head = this.#heads.get(key);
    return head === undefined ? NONE : head;
  }

  /** The slot of `policy` in the chain starting at `head` (from {@link BucketTable.head}), or -1. */
  findFrom(head: number, policy: Policy): number {
    // The policy is compared through its number (no map lookup per decision, and a short body that V8 inlines).
    const policies = this.#policies;
    let slot = head;
    while (slot !== NONE && policies[this.policyOf[slot]] !== policy) slot = this.next[slot];
    // A concurrency policy may hold its bucket under another object of its name (before or after a reload).
    if (slot === NONE && head !== NONE && policy.concurrent > 0) return this.#findSlots(head, policy);
    return slot;
  }

  /** The policy whose arithmetic applies to `slot` now: for a concurrency policy, the latest limit (D-G186). */
  policyAt(slot: number): Policy {
    return this.#policies[this.policyOf[slot]];
  }

  /** The slot of concurrency policy `policy` in the chain from `head`, found by its number, or -1. */
  #findSlots(head: number, policy: Policy): number {
    const index = this.ensurePolicy(policy);
    let slot = head;
    while (slot !== NONE && this.policyOf[slot] !== index) slot = this.next[slot];
    return slot;
  }

  /**
   * Registers a policy (once) and returns its index. A decision over several policies calls this for each new
   * one before it writes anything, so that a refusal leaves every bucket as it was (all or nothing).
   *
   * @throws SluiceError `ERR_TOO_MANY_POLICIES` for a policy beyond the 65,535th: policies are meant to come from
   * configuration, not to be defined per request or per key.
   */
  ensurePolicy(policy: Policy): number {
    // A table holds a handful of policies: comparing them is cheaper than hashing one.
    const policies = this.#policies;
    if (policies.length <= FEW_POLICIES) {
      for (let i = 0; i < policies.length; i++) if (policies[i] === policy) return i;
    }
    const known = this.#policyIndex.get(policy);
    if (known !== undefined) return known;
    const name = policy.bucketName ?? policy.name;
    const slots = policy.concurrent > 0 ? this.#slotsIndex.get(name) : undefined;
    if (slots !== undefined) return this.#succeed(slots, policy);
    if (this.#policies.length >= MAX_POLICIES) {
      throw new SluiceError(
        ErrorCode.TooManyPolicies,
        `a memory store tells at most 65,535 distinct policies apart; policy "${policy.name}" would be one more (define policies once, from configuration, and reuse the objects)`,
        { limit: MAX_POLICIES, policy: policy.name },
      );
    }
    const index = this.#policies.length;
    this.#policies.push(policy);
    this.#policyIndex.set(policy, index);
    if (policy.concurrent > 0) this.#slotsIndex.set(name, index);
    return index;
  }

  /**
   * Files a new object of a concurrency policy (a reload changed its limit) under the number of its name: its
   * buckets keep the slots taken, now out of the new limit (below zero left when it fell under the requests in
   * flight), and the old object still finds them, for the requests admitted before to give their slots back.
   * One pass over the table, once per changed policy and reload.
   */
  #succeed(index: number, policy: Policy): number {
    const delta = policy.capacityUnits - this.#policies[index].capacityUnits;
    if (delta !== 0) {
      for (let slot = 0; slot < this.highWater; slot++) {
        if (this.keys[slot] !== undefined && this.policyOf[slot] === index) this.units[slot] += delta;
      }
    }
    this.#policies[index] = policy;
    this.#policyIndex.set(policy, index);
    return index;
  }

  /**
   * Takes a slot for a new key, evicting one first when the table is at its cap. `pinned` lists the slots of
   * the decision in progress, which must survive it. `knownHead`, when given, is the key's first slot (or -1 for
   * none) as the caller found it, with only inserts since; it is ignored when the table is at its cap, where this
   * insert may evict (so a caller inserting several buckets never has to tell whether an earlier insert evicted).
   */
  insert(
    policy: Policy,
    key: string,
    now: number,
    pinned: Int32Array,
    pinnedCount: number,
    knownHead: number = UNKNOWN_HEAD,
  ): number {
    const index = this.ensurePolicy(policy);
    let head = knownHead;
    if (this.size >= this.#cap) {
      this.#evict(now, pinned, pinnedCount);
      // The eviction may have taken the key's first slot, this time or at an earlier insert of the caller's.
      head = UNKNOWN_HEAD;
    }
    let slot: number;
    if (this.#freeHead !== NONE) {
      slot = this.#freeHead;
      this.#freeHead = this.next[slot];
    } else {
      slot = this.highWater++;
      if (slot >= this.keys.length) this.#grow(slot + 1);
    }
    const next = this.next;
    this.keys[slot] = key;
    this.policyOf[slot] = index;
    this.units[slot] = this.#policies[index].capacityUnits;
    this.last[slot] = now;
    if (head === UNKNOWN_HEAD) head = this.head(key);
    if (head === NONE) {
      next[slot] = NONE;
      this.#heads.set(key, slot);
      this.placesAdded++;
    } else {
      // Behind the first slot: the map keeps its entry.
      next[slot] = next[head];
      next[head] = slot;
    }
    this.size++;
    return slot;
  }

  /** Forgets `key` under `policy`, if held. */
  remove(policy: Policy, key: string): void {
    const slot = this.find(policy, key);
    if (slot !== NONE) this.#release(slot);
  }

  /** Drops the full buckets among `count` slots from `from`; returns how many. */
  sweepSlice(from: number, count: number, now: number): number {
    const end = Math.min(this.highWater, from + count);
    let dropped = 0;
    for (let slot = from; slot < end; slot++) {
      if (this.keys[slot] === undefined) continue;
      if (this.#isFull(slot, now)) {
        this.#release(slot);
        dropped++;
      }
    }
    this.fullDropped += dropped;
    return dropped;
  }

  /** Empties the table. */
  clear(): void {
    this.#heads.clear();
    this.placesMoved++;
    this.keys.fill(undefined);
    this.highWater = 0;
    this.size = 0;
    this.#freeHead = NONE;
  }

  /**
   * Makes room for one key. Samples a few occupied slots at random: the first full one goes (no decision
   * changes); failing that, the one used longest ago. Sampling keeps eviction O(1) whatever the table size.
   */
  #evict(now: number, pinned: Int32Array, pinnedCount: number): void {
    let victim = NONE;
    let oldest = Number.POSITIVE_INFINITY;
    for (let tries = 0, taken = 0; taken < this.#sample && tries < this.#sample * 4; tries++) {
      const slot = this.#random() % this.highWater;
      if (this.keys[slot] === undefined || isPinned(slot, pinned, pinnedCount)) continue;
      taken++;
      if (this.#isFull(slot, now)) {
        this.fullDropped++;
        this.#release(slot);
        return;
      }
      // Slots taken are requests in flight, which nothing else counts: their bucket stays (D-G187).
      if (this.#holdsSlots(slot)) continue;
      const last = this.last[slot];
      if (last < oldest) {
        oldest = last;
        victim = slot;
      }
    }
    if (victim === NONE) {
      // Only pinned or free slots were drawn (a tiny table): take the first unpinned occupied slot.
      for (let slot = 0; slot < this.highWater; slot++) {
        if (
          this.keys[slot] !== undefined &&
          !isPinned(slot, pinned, pinnedCount) &&
          !this.#holdsSlots(slot)
        ) {
          victim = slot;
          break;
        }
      }
    }
    if (victim === NONE) return; // every slot belongs to this decision: exceed the cap by one request's checks
    this.evictions++;
    this.#release(victim);
  }

  /** Whether `slot` is a concurrency bucket with slots taken (nothing refills it: only their releases free it). */
  #holdsSlots(slot: number): boolean {
    const p = this.#policies[this.policyOf[slot]];
    return p.concurrent > 0 && this.units[slot] < p.capacityUnits;
  }

  #isFull(slot: number, now: number): boolean {
    return isFullAt(this.#policies[this.policyOf[slot]], this.units[slot], this.last[slot], now);
  }

  #release(slot: number): void {
    const next = this.next;
    const key = this.keys[slot] as string;
    const head = this.head(key);
    const after = next[slot];
    if (head === slot) {
      if (after === NONE) this.#heads.delete(key);
      else this.#heads.set(key, after);
      this.placesMoved++;
    } else {
      let p = head;
      while (next[p] !== slot) p = next[p];
      next[p] = after;
    }
    this.keys[slot] = undefined;
    next[slot] = this.#freeHead;
    this.#freeHead = slot;
    this.size--;
  }

  #grow(atLeast: number): void {
    // Past the cap only when one decision pins every slot (more checks than the cap allows).
    const next = Math.max(atLeast, Math.min(this.#cap, this.keys.length * 2));
    this.units = copyInto(new Float64Array(next), this.units);
    this.last = copyInto(new Float64Array(next), this.last);
    this.next = copyInto(new Int32Array(next), this.next);
    this.policyOf = copyInto(new Uint16Array(next), this.policyOf);
    // A preallocated array costs one pointer per slot; growing it by push would leave up to half again spare.
    const keys: (string | undefined)[] = new Array(next);
    for (let i = 0; i < this.highWater; i++) keys[i] = this.keys[i];
    this.keys = keys;
  }

  /** xorshift32: cheap, allocation free, and good enough to spread samples; not for anything secret. */
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

function copyInto<T extends Float64Array | Uint16Array | Int32Array>(target: T, source: T): T {
  target.set(source as never);
  return target;
}
