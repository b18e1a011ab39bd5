import {
  EMPTY_OVERRIDES,
  keepsOverride,
  type OverrideChange,
  type OverrideRule,
  type OverrideSnapshot,
  type OverrideStore,
  type OverrideWriteOptions,
  withChange,
  withOverride,
} from '../core/index.js';
import { mergeHistories, withAutomaticChange } from '../core/override.js';

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
  /** Changes written as automatic (penalty blocks), kept apart so that they never push out an operator's. */
  #automatic: readonly OverrideChange[] = Object.freeze([]);
  readonly #now: () => number;

  /** @param wallClock - epoch milliseconds, for pruning expired rules on write; default `Date.now`. */
  constructor(wallClock: () => number = Date.now) {
    this.#now = wallClock;
  }

  snapshot(): OverrideSnapshot {
    return this.#snapshot;
  }

  async set(rule: OverrideRule, change: OverrideChange, options?: OverrideWriteOptions): Promise<boolean> {
    const now = this.#now();
    if (options?.automatic === true) {
      const existing = this.#snapshot.rules.find((r) => r.id === rule.id);
      if (keepsOverride(existing, rule, now)) return false;
      this.#publish(withOverride(this.#snapshot.rules, rule, now));
      this.#automatic = Object.freeze(withAutomaticChange(this.#automatic, change));
      return true;
    }
    this.#publish(withOverride(this.#snapshot.rules, rule, now));
    this.#history = Object.freeze(withChange(this.#history, change));
    return true;
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
    return mergeHistories(this.#history, this.#automatic);
  }

  refresh(): void {}

  close(): void {}

  #publish(rules: OverrideRule[]): void {
    this.#snapshot = Object.freeze({ version: this.#snapshot.version + 1, rules: Object.freeze(rules) });
  }
}
