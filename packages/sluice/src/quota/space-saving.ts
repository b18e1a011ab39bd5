import { integerOption } from '../core/index.js';

/** One counted item of a {@link SpaceSaving} summary. */
export interface HeavyHitter<K> {
  /** The item. */
  readonly item: K;
  /** Its estimated count: never below the true count, at most `error` above it. */
  readonly count: number;
  /** The largest overestimate possible for this item (the count of the item it replaced). */
  readonly error: number;
}

interface Slot<K> {
  item: K;
  count: number;
  error: number;
  index: number;
}

/**
 * The space-saving algorithm (Metwally, Agrawal, El Abbadi 2005): the heaviest items of a stream in a fixed number
 * of counters. Any item whose true count exceeds `total / capacity` is guaranteed to be held. A new item replaces
 * the item with the smallest count and inherits that count as its possible error. A binary min-heap finds that
 * item in O(log capacity); counting an item already held allocates nothing.
 *
 * @typeParam K - the item type (strings for keys).
 *
 * @example
 * ```ts
 * const top = new SpaceSaving<string>(100);
 * top.offer('ip:203.0.113.9');
 * top.top(10); // [{ item: 'ip:203.0.113.9', count: 1, error: 0 }]
 * ```
 */
export class SpaceSaving<K> {
  /** The number of counters. */
  readonly capacity: number;
  readonly #byItem = new Map<K, Slot<K>>();
  readonly #heap: Slot<K>[] = [];
  #total = 0;

  /** @throws SluiceError `ERR_INVALID_OPTION` unless `capacity` is an integer from 1 to 1,000,000. */
  constructor(capacity: number) {
    this.capacity = integerOption('capacity', capacity, 1, 1_000_000);
  }

  /** Items held. */
  get size(): number {
    return this.#heap.length;
  }

  /** The weight of every item offered so far. */
  get total(): number {
    return this.#total;
  }

  /** True when `item` is held. */
  has(item: K): boolean {
    return this.#byItem.has(item);
  }

  /**
   * Counts `weight` occurrences of `item`.
   *
   * @returns the item pushed out to make room, if any.
   */
  offer(item: K, weight = 1): K | undefined {
    this.#total += weight;
    const slot = this.#byItem.get(item);
    if (slot !== undefined) {
      slot.count += weight;
      this.#down(slot.index);
      return undefined;
    }
    if (this.#heap.length < this.capacity) {
      const s: Slot<K> = { item, count: weight, error: 0, index: this.#heap.length };
      this.#heap.push(s);
      this.#byItem.set(item, s);
      this.#up(s.index);
      return undefined;
    }
    const min = this.#heap[0];
    const evicted = min.item;
    this.#byItem.delete(min.item);
    min.item = item;
    min.error = min.count;
    min.count += weight;
    this.#byItem.set(item, min);
    this.#down(0);
    return evicted;
  }

  /** The `n` items with the highest counts, highest first. */
  top(n: number = this.capacity): HeavyHitter<K>[] {
    return this.#heap
      .map((s) => ({ item: s.item, count: s.count, error: s.error }))
      .sort((a, b) => b.count - a.count || a.error - b.error)
      .slice(0, n);
  }

  /** Forgets every item. */
  clear(): void {
    this.#byItem.clear();
    this.#heap.length = 0;
    this.#total = 0;
  }

  #up(i: number): void {
    const h = this.#heap;
    while (i > 0) {
      const p = (i - 1) >> 1;
      if (h[p].count <= h[i].count) break;
      this.#swap(i, p);
      i = p;
    }
  }

  #down(i: number): void {
    const h = this.#heap;
    for (;;) {
      const l = 2 * i + 1;
      const r = l + 1;
      let m = i;
      if (l < h.length && h[l].count < h[m].count) m = l;
      if (r < h.length && h[r].count < h[m].count) m = r;
      if (m === i) return;
      this.#swap(i, m);
      i = m;
    }
  }

  #swap(a: number, b: number): void {
    const h = this.#heap;
    const t = h[a];
    h[a] = h[b];
    h[b] = t;
    h[a].index = a;
    h[b].index = b;
  }
}
