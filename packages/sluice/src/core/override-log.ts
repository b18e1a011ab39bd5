import type { OverrideRule, OverrideSnapshot } from './override.js';

/** One rule's change between two snapshots: set to `rule`, or removed (`rule` undefined). */
export interface OverrideDelta {
  /** The rule's id. */
  readonly id: string;
  /** The rule as set, or `undefined` when it was removed. */
  readonly rule: OverrideRule | undefined;
}

/** Deltas kept per store: a reader further behind than this rebuilds from the whole list. */
export const OVERRIDE_LOG_LIMIT = 8192;

/**
 * The last changes of a store, by version, so that a reader holding an index of an earlier snapshot applies
 * only what changed instead of compiling every rule again: one write to a store of 100,000 rules then costs its
 * own rule, not the whole list. Bounded: the oldest deltas go first, and a reader that far behind rebuilds.
 */
export class OverrideLog {
  /** Versions and deltas in order; `versions[i]` is the version the delta `deltas[i]` led to. */
  #versions: number[] = [];
  #deltas: OverrideDelta[] = [];
  /** The oldest version a reader may hold and still be brought forward by deltas alone. */
  #floor: number;

  /** @param version - the version of the first snapshot the log starts from. */
  constructor(version: number) {
    this.#floor = version;
  }

  /**
   * Records the deltas that made `version` out of `from`.
   *
   * @param version - the new version.
   * @param deltas - the rules set or removed.
   * @param from - the version they apply to: the last recorded one, else the log starts again at `version` (a
   *   store read whole); default the version before.
   */
  record(version: number, deltas: readonly OverrideDelta[], from: number = version - 1): void {
    const last = this.#versions.length === 0 ? this.#floor : this.#versions[this.#versions.length - 1];
    if (from !== last || version <= last) {
      // A jump (a store read whole again): nothing before it can be replayed.
      this.#versions = [];
      this.#deltas = [];
      this.#floor = version;
      return;
    }
    if (deltas.length === 0) {
      this.#versions.push(version);
      this.#deltas.push({ id: '', rule: undefined });
    }
    for (const d of deltas) {
      this.#versions.push(version);
      this.#deltas.push(d);
    }
    if (this.#deltas.length > OVERRIDE_LOG_LIMIT * 2) {
      // Trimmed in halves, so the copy is paid once per OVERRIDE_LOG_LIMIT records, not per record.
      const cut = this.#deltas.length - OVERRIDE_LOG_LIMIT;
      let at = cut;
      // Never between deltas of one version.
      while (at < this.#versions.length && this.#versions[at] === this.#versions[at - 1]) at++;
      this.#floor = this.#versions[at - 1];
      this.#versions = this.#versions.slice(at);
      this.#deltas = this.#deltas.slice(at);
    }
  }

  /**
   * The deltas from `held` (exclusive) to `upTo` (inclusive), oldest first, or `undefined` when the log no
   * longer reaches back to `held` (or `held` is ahead of it).
   *
   * @param held - the version the reader's index was built for.
   * @param upTo - the version of the snapshot asked.
   */
  since(held: number, upTo: number): readonly OverrideDelta[] | undefined {
    const v = this.#versions;
    const last = v.length === 0 ? this.#floor : v[v.length - 1];
    // Every version from the floor to the last has an entry (an empty change a placeholder), so the log covers
    // (held, upTo] exactly when held is not below the floor and upTo not past the last.
    if (held < this.#floor || held > upTo || upTo > last) return undefined;
    let start = v.length;
    // A reader is most often a version or two behind: scanned from the end.
    while (start > 0 && v[start - 1] > held) start--;
    const out: OverrideDelta[] = [];
    for (let i = start; i < v.length && v[i] <= upTo; i++)
      if (this.#deltas[i].id !== '') out.push(this.#deltas[i]);
    return out;
  }
}

/**
 * The snapshot of a store that keeps its rules in a `Map` by id and its changes in `log` (the memory and the
 * shared stores). The list is built on first read and kept: a write copies nothing. A snapshot read for the first
 * time after a later write shows the rules of then (newer ones, never older), which is what its reader wants.
 *
 * @param version - the snapshot's version, already recorded in `log`.
 * @param rules - the store's rules by id, live (never copied).
 * @param log - the store's log of changes.
 */
export function mapSnapshot(
  version: number,
  rules: ReadonlyMap<string, OverrideRule>,
  log: OverrideLog,
): OverrideSnapshot {
  let list: readonly OverrideRule[] | undefined;
  return Object.freeze({
    version,
    get rules(): readonly OverrideRule[] {
      list ??= Object.freeze([...rules.values()]);
      return list;
    },
    changesSince: (held: number) => log.since(held, version),
    ruleOf: (id: string) => rules.get(id),
  });
}
