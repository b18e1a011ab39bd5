/** Entries per bucket. */
const WAYS = 8;

/**
 * The first request of each (group, client) pair seen once so far, in a fixed table: a pair enters the rate
 * distribution only with its second request, so clients that send one request (a scan, a flood of addresses) never
 * take its room, and a client's first request is still counted when its second comes. A pair is found by the two
 * hashes of its client key and its group's number (a bucket of eight entries per hash, no string kept). When the
 * bucket is full, its oldest entry is dropped and counted in {@link FirstRequests.evictions}: that client, if it comes back, is
 * taken for a new one, so from then on the counts of clients are estimates.
 */
export class FirstRequests {
  /** Entries dropped to make room: counts of clients past the first are estimated. */
  evictions = 0;
  /** The taken entry's time and cost, after {@link FirstRequests.take} found one. */
  timeMs = 0;
  cost = 0;
  /** The dropped entry's group, after {@link FirstRequests.take} dropped one (else -1), and its first hash. */
  evictedGroup = -1;
  evictedA = 0;
  readonly #mask: number;
  readonly #groups: Int32Array;
  readonly #a: Int32Array;
  readonly #b: Int32Array;
  readonly #times: Float64Array;
  readonly #costs: Float64Array;

  /** @param size - entries (a power of two): 2^20 take 28 MB. */
  constructor(size = 1 << 20) {
    this.#mask = size - 1;
    this.#groups = new Int32Array(size);
    this.#a = new Int32Array(size);
    this.#b = new Int32Array(size);
    this.#times = new Float64Array(size);
    this.#costs = new Float64Array(size);
  }

  /**
   * Finds the pair's first request and takes it out, or keeps this request as its first.
   *
   * @param group - the group's number (0 or more).
   * @param a - the client key's first hash, and `b` its second.
   * @returns true with the first request's time and cost in {@link FirstRequests.timeMs} and
   *   {@link FirstRequests.cost}; false when this request was kept as the first.
   */
  take(group: number, a: number, b: number, timeMs: number, cost: number): boolean {
    const g = group + 1;
    // A bucket of WAYS entries: a pair can only lose its entry once its whole bucket is taken.
    const start = (Math.imul(a ^ Math.imul(g, 0x9e3779b1), 0x85ebca6b) >>> 8) & this.#mask & ~(WAYS - 1);
    const groups = this.#groups;
    let free = -1;
    let oldest = start;
    for (let k = start; k < start + WAYS; k++) {
      const kg = groups[k];
      if (kg === 0) {
        if (free < 0) free = k;
      } else if (kg === g && this.#a[k] === (a | 0) && this.#b[k] === (b | 0)) {
        this.timeMs = this.#times[k];
        this.cost = this.#costs[k];
        groups[k] = 0;
        return true;
      } else if (this.#times[k] < this.#times[oldest]) oldest = k;
    }
    this.evictedGroup = -1;
    let at = free;
    if (at < 0) {
      at = oldest;
      this.evictedGroup = groups[at] - 1;
      this.evictedA = this.#a[at] >>> 0;
      this.evictions++;
    }
    groups[at] = g;
    this.#a[at] = a;
    this.#b[at] = b;
    this.#times[at] = timeMs;
    this.#costs[at] = cost;
    return false;
  }

  /** Calls `f` with each kept entry's group and its client key's first hash. */
  forEach(f: (group: number, a: number) => void): void {
    const groups = this.#groups;
    for (let k = 0; k < groups.length; k++) if (groups[k] !== 0) f(groups[k] - 1, this.#a[k] >>> 0);
  }
}
