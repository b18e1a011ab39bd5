/**
 * The count of requests in flight that load shedding holds to its limit: in this thread, or over every thread of
 * `sluice serve --threads` on one shared word, so that `overload.maxInFlight` caps the process as a whole.
 */
export interface InFlightCount {
  /** Adds one when the count is below `cap`; returns the count with it, or 0 when at or above `cap`. */
  enterBelow(cap: number): number;
  /** Takes one away, never below 0. */
  leave(): void;
  /** The count now. */
  readonly value: number;
}

/** A count of this thread's own. */
export class LocalInFlight implements InFlightCount {
  #n = 0;

  enterBelow(cap: number): number {
    return this.#n < cap ? ++this.#n : 0;
  }

  leave(): void {
    if (this.#n > 0) this.#n--;
  }

  get value(): number {
    return this.#n;
  }
}

/** Bytes of the shared word a {@link SharedInFlight} counts in. */
export const SHARED_IN_FLIGHT_BYTES = 4;

/**
 * A count on a word of shared memory, the same in every thread: compare-and-swap, so two threads never both take
 * the last place.
 */
export class SharedInFlight implements InFlightCount {
  readonly #word: Int32Array;

  /** @param buffer - at least {@link SHARED_IN_FLIGHT_BYTES}, shared by the threads. */
  constructor(buffer: SharedArrayBuffer) {
    this.#word = new Int32Array(buffer, 0, 1);
  }

  enterBelow(cap: number): number {
    const w = this.#word;
    for (;;) {
      const n = Atomics.load(w, 0);
      if (n >= cap) return 0;
      if (Atomics.compareExchange(w, 0, n, n + 1) === n) return n + 1;
    }
  }

  leave(): void {
    const w = this.#word;
    for (;;) {
      const n = Atomics.load(w, 0);
      if (n <= 0) return;
      if (Atomics.compareExchange(w, 0, n, n - 1) === n) return;
    }
  }

  get value(): number {
    return Atomics.load(this.#word, 0);
  }
}
