import {
  EMPTY_OVERRIDES,
  type OverrideChange,
  type OverrideRule,
  type OverrideSnapshot,
  type OverrideStore,
  withChange,
  withOverride,
} from '../core/index.js';

/**
 * Overrides of one process, beside a `MemoryStore`: every limiter holding this object sees a change at once.
 * They last as long as the process, like the memory store's buckets.
 *
 * @example
 * ```ts
 * const overrides = new MemoryOverrides();
 * createHttpLimiter({ limiter, rules, overrides });
 * ```
 */
export class MemoryOverrides implements OverrideStore {
  readonly kind = 'memory';
  #snapshot = EMPTY_OVERRIDES;
  #history: readonly OverrideChange[] = Object.freeze([]);
  readonly #now: () => number;

  /** @param wallClock - epoch milliseconds, for pruning expired rules on write; default `Date.now`. */
  constructor(wallClock: () => number = Date.now) {
    this.#now = wallClock;
  }

  snapshot(): OverrideSnapshot {
    return this.#snapshot;
  }

  async set(rule: OverrideRule, change: OverrideChange): Promise<void> {
    this.#publish(withOverride(this.#snapshot.rules, rule, this.#now()));
    this.#history = Object.freeze(withChange(this.#history, change));
  }

  async remove(id: string, change: OverrideChange): Promise<OverrideRule | undefined> {
    const rules = this.#snapshot.rules;
    const gone = rules.find((r) => r.id === id);
    if (gone === undefined) return undefined;
    this.#publish(rules.filter((r) => r !== gone));
    this.#history = Object.freeze(withChange(this.#history, { ...change, rule: gone }));
    return gone;
  }

  async history(): Promise<readonly OverrideChange[]> {
    return this.#history;
  }

  refresh(): void {}

  close(): void {}

  #publish(rules: OverrideRule[]): void {
    this.#snapshot = Object.freeze({ version: this.#snapshot.version + 1, rules: Object.freeze(rules) });
  }
}
