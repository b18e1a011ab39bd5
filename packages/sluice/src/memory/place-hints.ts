import type { BucketTable } from './bucket-table.js';

/** The most hints one run of prefetch calls keeps (a replay batch is 32 lines). */
const HINTS = 64;

/**
 * The places (first slots) a run of `MemoryStore.prefetch` calls found, for the decisions that follow: each takes
 * its key's place from here instead of looking the key up again, while no place has moved since and, for a key
 * that had none, while no key was given one. Hints are taken once each, in the order they were recorded; one a
 * decision never asked for (a line that was not decided) is passed over.
 */
export class PlaceHints {
  readonly #keys: (string | undefined)[] = new Array<string | undefined>(HINTS).fill(undefined);
  readonly #places = new Int32Array(HINTS);
  #count = 0;
  /** The first hint no decision has taken yet. */
  #at = 0;
  #moved = 0;
  #added = 0;
  /** A decision ran since the last record: the next record starts a new run. */
  #taken = false;

  /** Whether any hint is held: decisions of a store that is never prefetched skip the lookups here. */
  get held(): boolean {
    return this.#count > 0;
  }

  /** Notes that a decision ran, so that the next prefetch starts a new run of hints. */
  taken(): void {
    this.#taken = true;
  }

  /** Records the place a prefetch found for `key`; a new run (or a table changed under the last) starts over. */
  record(t: BucketTable, key: string, place: number): void {
    if (this.#taken || t.placesMoved !== this.#moved || t.placesAdded !== this.#added) {
      this.#keys.fill(undefined, 0, this.#count);
      this.#count = 0;
      this.#at = 0;
      this.#moved = t.placesMoved;
      this.#added = t.placesAdded;
      this.#taken = false;
    }
    const n = this.#count;
    if (n < HINTS) {
      this.#keys[n] = key;
      this.#places[n] = place;
      this.#count = n + 1;
    }
  }

  /** The first slot of `key`: its hint while the hint still holds, else looked up in the table. */
  placeOf(t: BucketTable, key: string): number {
    if (t.placesMoved === this.#moved) {
      const keys = this.#keys;
      const n = this.#count;
      for (let j = this.#at; j < n; j++) {
        if (keys[j] !== key) continue;
        const place = this.#places[j];
        if (place < 0 && t.placesAdded !== this.#added) break;
        this.#at = j + 1;
        return place;
      }
    }
    return t.head(key);
  }
}
