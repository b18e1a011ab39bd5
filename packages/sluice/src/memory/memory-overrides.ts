import {
  EMPTY_OVERRIDES,
  keepsOverride,
  type OverrideChange,
  type OverrideRule,
  type OverrideSnapshot,
  type OverrideStore,
  type OverrideWriteOptions,
  withChange,
} from '../core/index.js';
import { mapSnapshot, type OverrideDelta, OverrideLog } from '../core/override-log.js';
import { mergeHistories, withAutomaticChange } from '../core/override-writes.js';

/** Expired rules are dropped on a write at most this often: a pass over every rule, paid once a second. */
const PRUNE_EVERY_MS = 1000;

/**
 * Overrides of one process, beside a `MemoryStore`: every limiter holding this object sees a change at once.
 * They last as long as the process, like the memory store's buckets.
 *
 * A write costs its own rule, whatever the number of rules: the rules live in a `Map` by id (a rule set again
 * moves to the end, as `withOverride` orders them), the snapshot's list is built when something reads it (a
 * listing, an index built whole) and kept until the next write, and limiters bring their indexes up to date from
 * the log of changes (`changesSince`). Expired rules are dropped on a write, at most once a second.
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
  readonly #rules = new Map<string, OverrideRule>();
  #history: readonly OverrideChange[] = Object.freeze([]);
  /** Changes written as automatic (penalty blocks), kept apart so that they never push out an operator's. */
  #automatic: readonly OverrideChange[] = Object.freeze([]);
  readonly #now: () => number;
  /** The last changes, so that a limiter's index applies a write instead of compiling every rule again. */
  readonly #log = new OverrideLog(0);
  #pruneAt = 0;

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
      if (keepsOverride(this.#rules.get(rule.id), rule, now)) return false;
      this.#setRule(rule, now);
      this.#automatic = Object.freeze(withAutomaticChange(this.#automatic, change));
      return true;
    }
    this.#setRule(rule, now);
    this.#history = Object.freeze(withChange(this.#history, change));
    return true;
  }

  async remove(id: string, change: OverrideChange): Promise<OverrideRule | undefined> {
    const gone = this.#rules.get(id);
    if (gone === undefined) return undefined;
    this.#rules.delete(id);
    this.#publish([{ id, rule: undefined }]);
    this.#history = Object.freeze(withChange(this.#history, { ...change, rule: gone }));
    return gone;
  }

  async history(): Promise<readonly OverrideChange[]> {
    return mergeHistories(this.#history, this.#automatic);
  }

  refresh(): void {}

  close(): void {}

  /** Sets a rule, any rule of its id replaced and moved to the end, and drops expired rules when due. */
  #setRule(rule: OverrideRule, now: number): void {
    const rules = this.#rules;
    const deltas: OverrideDelta[] = [];
    if (now >= this.#pruneAt) {
      this.#pruneAt = now + PRUNE_EVERY_MS;
      for (const [id, r] of rules) {
        if (r.expiresAt !== undefined && r.expiresAt <= now && id !== rule.id) {
          rules.delete(id);
          deltas.push({ id, rule: undefined });
        }
      }
    }
    rules.delete(rule.id);
    rules.set(rule.id, rule);
    deltas.push({ id: rule.id, rule });
    this.#publish(deltas);
  }

  #publish(deltas: readonly OverrideDelta[]): void {
    const version = this.#snapshot.version + 1;
    const log = this.#log;
    log.record(version, deltas);
    this.#snapshot = mapSnapshot(version, this.#rules, log);
  }
}
