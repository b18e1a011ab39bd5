import type { Policy } from 'sluice';

/**
 * The policies of Envoy's limit overrides, one object per definition, in a table of bounded size that makes room
 * by evicting the least recently used one: a new override is always a limit, however many came before (a table
 * that refused new ones once full turned every later override into the configured limit, or into none).
 *
 * The memory store files buckets by policy object, so a policy evicted here while a store still holds it (its
 * buckets) is handed back as that same object when its override returns, through a weak reference: its
 * buckets keep counting, and the store meets no second object of one definition. A policy nothing else holds
 * is collected and later defined again, equal, which the shared store and Redis file under the same buckets
 * (they tell policies apart by definition).
 */
export class OverrideTable {
  /** Policies held strongly, at most this many. */
  readonly capacity: number;
  /** Least recently used first: a Map iterates in insertion order and a use moves the entry to the end. */
  readonly #live = new Map<string, Policy>();
  /** Evicted policies, while something else holds them. */
  readonly #retired = new Map<string, WeakRef<Policy>>();
  readonly #collected = new FinalizationRegistry<string>((id) => {
    // The id may name a newer policy by now: forget only a reference that is gone.
    if (this.#retired.get(id)?.deref() === undefined) this.#retired.delete(id);
  });
  #evictions = 0;
  #last: string | undefined;

  /**
   * @param capacity - policies held strongly (at least 1).
   */
  constructor(capacity: number) {
    this.capacity = Math.max(1, Math.floor(capacity));
  }

  /** Policies held strongly now. */
  get size(): number {
    return this.#live.size;
  }

  /** Policies evicted since the table was made. */
  get evictions(): number {
    return this.#evictions;
  }

  /**
   * The policy of a definition, made the most recently used one.
   *
   * @param id - the definition: equal ids must define equal policies.
   * @param define - builds the policy when neither the table nor a store still holds one.
   * @param onEvicted - called after an eviction this use causes, with the evicted policy and the running count.
   * @returns the policy, never `undefined`: a full table evicts instead.
   */
  use(id: string, define: () => Policy, onEvicted?: (policy: Policy, evictions: number) => void): Policy {
    const live = this.#live;
    let p = live.get(id);
    if (p !== undefined) {
      if (this.#last !== id) {
        live.delete(id);
        live.set(id, p);
        this.#last = id;
      }
      return p;
    }
    p = this.#retired.get(id)?.deref();
    if (p !== undefined) this.#retired.delete(id);
    else {
      p = define();
      this.#collected.register(p, id);
    }
    if (live.size >= this.capacity) this.#evict(onEvicted);
    live.set(id, p);
    this.#last = id;
    return p;
  }

  #evict(onEvicted: ((policy: Policy, evictions: number) => void) | undefined): void {
    const first = this.#live.entries().next();
    if (first.done === true) return;
    const [id, p] = first.value;
    this.#live.delete(id);
    this.#retired.set(id, new WeakRef(p));
    this.#evictions++;
    onEvicted?.(p, this.#evictions);
  }
}
