/**
 * A three-level cache of metric cells (running values with their frozen labels) keyed by label values, then by a
 * small integer slot (the outcome index). Nested maps look up without building a key string, so recording a label
 * combination already seen allocates nothing.
 *
 * @typeParam T - the cached value.
 *
 * @example
 * ```ts
 * const cache = new ChildCache<{ value: number }>(1);
 * let cell = cache.find('rl.write', 'free', '/api/*', 0);
 * if (cell === undefined) cell = cache.store('rl.write', 'free', '/api/*', 0, { value: 0 });
 * cell.value++;
 * ```
 */
export class ChildCache<T> {
  readonly #root = new Map<string, Map<string, Map<string, (T | undefined)[]>>>();
  readonly #slots: number;
  readonly #all: T[] = [];

  /** @param slots - the number of integer slots per label combination (1 when unused). */
  constructor(slots: number) {
    this.#slots = slots;
  }

  /** Every value stored, in insertion order (for collection at scrape time). */
  get values(): readonly T[] {
    return this.#all;
  }

  /** The value for `(a, b, c, slot)`, or `undefined` when none is stored. */
  find(a: string, b: string, c: string, slot: number): T | undefined {
    return this.#root.get(a)?.get(b)?.get(c)?.[slot];
  }

  /** Stores `value` for `(a, b, c, slot)` and returns it. */
  store(a: string, b: string, c: string, slot: number, value: T): T {
    let l1 = this.#root.get(a);
    if (l1 === undefined) {
      l1 = new Map();
      this.#root.set(a, l1);
    }
    let l2 = l1.get(b);
    if (l2 === undefined) {
      l2 = new Map();
      l1.set(b, l2);
    }
    let row = l2.get(c);
    if (row === undefined) {
      row = new Array<T | undefined>(this.#slots).fill(undefined);
      l2.set(c, row);
    }
    if (row[slot] === undefined) this.#all.push(value);
    row[slot] = value;
    return value;
  }
}
