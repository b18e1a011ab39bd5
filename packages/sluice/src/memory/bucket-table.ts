import { ErrorCode, isFullAt, type Policy, SluiceError } from '../core/index.js';

const NONE = -1;
/** Policies one table can tell apart: a slot names its policy in 16 bits. */
export const MAX_POLICIES = 65_535;

/**
 * Bucket state as a struct of arrays: slot i holds `units[i]` at time `last[i]` for key `keys[i]` of policy
 * `policies[policyOf[i]]`. One Map per policy finds a key's slot, so keys of different policies never share a
 * bucket and no combined key string is built per decision. The arrays grow by doubling up to the cap and are
 * reused through a free list, so steady traffic allocates nothing.
 */
export class BucketTable {
  units: Float64Array;
  last: Float64Array;
  policyOf: Uint16Array;
  keys: (string | undefined)[];
  /** Slots ever used; slots below it are occupied or on the free list. */
  highWater = 0;
  size = 0;
  evictions = 0;
  fullDropped = 0;
  sweeps = 0;
  readonly #cap: number;
  readonly #sample: number;
  /** Head of the free list; a free slot's `last` holds the next free slot, so the list costs no memory. */
  #freeHead = NONE;
  #maps = new Map<Policy, Map<string, number>>();
  #policyIndex = new Map<Policy, number>();
  #policies: Policy[] = [];
  #lastPolicy: Policy | undefined;
  #lastMap: Map<string, number> | undefined;
  #rng = 0x9e3779b9;

  constructor(cap: number, sample: number) {
    this.#cap = cap;
    this.#sample = sample;
    const initial = Math.min(cap, 1024);
    this.units = new Float64Array(initial);
    this.last = new Float64Array(initial);
    this.policyOf = new Uint16Array(initial);
    this.keys = new Array(initial);
  }

  /** The slot of `key` under `policy`, or -1. */
  find(policy: Policy, key: string): number {
    let map: Map<string, number> | undefined;
    if (policy === this.#lastPolicy) map = this.#lastMap;
    else {
      map = this.#maps.get(policy);
      if (map === undefined) return NONE;
      this.#lastPolicy = policy;
      this.#lastMap = map;
    }
    const slot = (map as Map<string, number>).get(key);
    return slot === undefined ? NONE : slot;
  }

  /**
   * Registers a policy (once) and returns its index. A decision over several policies calls this for each new
   * one before it writes anything, so that a refusal leaves every bucket as it was (all or nothing).
   *
   * @throws SluiceError `ERR_TOO_MANY_POLICIES` for a policy beyond the 65,535th: policies are meant to come from
   * configuration, not to be defined per request or per key.
   */
  ensurePolicy(policy: Policy): number {
    const known = this.#policyIndex.get(policy);
    if (known !== undefined) return known;
    if (this.#policies.length >= MAX_POLICIES) {
      throw new SluiceError(
        ErrorCode.TooManyPolicies,
        `a memory store tells at most 65,535 distinct policies apart; policy "${policy.name}" would be one more (define policies once, from configuration, and reuse the objects)`,
        { limit: MAX_POLICIES, policy: policy.name },
      );
    }
    const index = this.#policies.length;
    this.#policies.push(policy);
    this.#maps.set(policy, new Map());
    this.#policyIndex.set(policy, index);
    return index;
  }

  /**
   * Takes a slot for a new key, evicting one first when the table is at its cap. `pinned` lists the slots of
   * the decision in progress, which must survive it.
   */
  insert(policy: Policy, key: string, now: number, pinned: Int32Array, pinnedCount: number): number {
    const index = this.ensurePolicy(policy);
    const map = this.#maps.get(policy) as Map<string, number>;
    if (this.size >= this.#cap) this.#evict(now, pinned, pinnedCount);
    let slot: number;
    if (this.#freeHead !== NONE) {
      slot = this.#freeHead;
      this.#freeHead = this.last[slot];
    } else {
      slot = this.highWater++;
      if (slot >= this.units.length) this.#grow(slot + 1);
    }
    this.keys[slot] = key;
    this.policyOf[slot] = index;
    this.units[slot] = policy.capacityUnits;
    this.last[slot] = now;
    map.set(key, slot);
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
      const policy = this.#policies[this.policyOf[slot]];
      if (isFullAt(policy, this.units[slot], this.last[slot], now)) {
        this.#release(slot);
        dropped++;
      }
    }
    this.fullDropped += dropped;
    return dropped;
  }

  /** Empties the table. */
  clear(): void {
    for (const map of this.#maps.values()) map.clear();
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
      const policy = this.#policies[this.policyOf[slot]];
      if (isFullAt(policy, this.units[slot], this.last[slot], now)) {
        this.fullDropped++;
        this.#release(slot);
        return;
      }
      if (this.last[slot] < oldest) {
        oldest = this.last[slot];
        victim = slot;
      }
    }
    if (victim === NONE) {
      // Only pinned or free slots were drawn (a tiny table): take the first unpinned occupied slot.
      for (let slot = 0; slot < this.highWater; slot++) {
        if (this.keys[slot] !== undefined && !isPinned(slot, pinned, pinnedCount)) {
          victim = slot;
          break;
        }
      }
    }
    if (victim === NONE) return; // every slot belongs to this decision: exceed the cap by one request's checks
    this.evictions++;
    this.#release(victim);
  }

  #release(slot: number): void {
    const key = this.keys[slot] as string;
    this.#maps.get(this.#policies[this.policyOf[slot]])?.delete(key);
    this.keys[slot] = undefined;
    this.last[slot] = this.#freeHead;
    this.#freeHead = slot;
    this.size--;
  }

  #grow(atLeast: number): void {
    // Past the cap only when one decision pins every slot (more checks than the cap allows).
    const next = Math.max(atLeast, Math.min(this.#cap, this.units.length * 2));
    this.units = copyInto(new Float64Array(next), this.units);
    this.last = copyInto(new Float64Array(next), this.last);
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

function copyInto<T extends Float64Array | Uint16Array>(target: T, source: T): T {
  target.set(source as never);
  return target;
}
