/** The windows per-client rates are measured over, in milliseconds: 1 s, 1 min, 1 h. */
export const RATE_WINDOWS_MS = [1000, 60_000, 3_600_000] as const;

/** Percentiles of per-client peaks over one window. */
export interface Percentiles {
  readonly p50: number;
  readonly p90: number;
  readonly p99: number;
  readonly max: number;
}

/** The distribution of one group's clients (an endpoint pattern, a tier). */
export interface GroupDistribution {
  readonly group: string;
  readonly requests: number;
  readonly clients: number;
  /** Per window of {@link RATE_WINDOWS_MS}: percentiles over clients of each client's busiest window. */
  readonly windows: readonly [Percentiles, Percentiles, Percentiles];
  /** Per window: each client's peak, sorted ascending (for proposing a limit at any share). */
  readonly sortedPeaks: readonly [Float64Array, Float64Array, Float64Array];
}

const W = RATE_WINDOWS_MS.length;

/** One group's clients: their slots in the typed arrays, in order of arrival. */
interface Group {
  requests: number;
  readonly slots: number[];
  readonly byClient: Map<string, number>;
}

/**
 * Per-client peak request counts over 1 s, 1 min and 1 h windows (aligned to the epoch), per group. A client's peak
 * is its busiest window; the distribution is over clients. State is a few numbers per (group, client) in typed
 * arrays, up to a cap of pairs (requests of pairs beyond it are counted in `untracked`). Clients are found per
 * group by their key as given, so a caller passing the same key and group strings again (bucket keys without a
 * key prefix are) builds no string per request and finds hashes V8 already holds.
 */
export class RateDistribution {
  readonly #groups = new Map<string, Group>();
  #window = new Float64Array(0);
  #count = new Float64Array(0);
  #peak = new Float64Array(0);
  #size = 0;
  readonly #cap: number;
  untracked = 0;

  /** @param cap - the most (group, client) pairs tracked. */
  constructor(cap: number) {
    this.#cap = cap;
  }

  /**
   * Counts one request of a client in a group.
   *
   * @param group - the endpoint pattern or tier.
   * @param client - the caller's key.
   * @param timeMs - the request's time.
   * @param cost - tokens the request costs.
   */
  add(group: string, client: string, timeMs: number, cost = 1): void {
    let g = this.#groups.get(group);
    if (g === undefined) {
      g = { requests: 0, slots: [], byClient: new Map() };
      this.#groups.set(group, g);
    }
    g.requests++;
    let slot = g.byClient.get(client);
    if (slot === undefined) {
      if (this.#size >= this.#cap) {
        this.untracked++;
        return;
      }
      slot = this.#size++;
      this.#grow();
      g.byClient.set(client, slot);
      g.slots.push(slot);
      for (let w = 0; w < W; w++) this.#window[slot * W + w] = -1;
    }
    for (let w = 0; w < W; w++) {
      const i = slot * W + w;
      const win = Math.floor(timeMs / RATE_WINDOWS_MS[w]);
      if (win !== this.#window[i]) {
        this.#window[i] = win;
        this.#count[i] = 0;
      }
      const c = this.#count[i] + cost;
      this.#count[i] = c;
      if (c > this.#peak[i]) this.#peak[i] = c;
    }
  }

  /** The groups, most requested first. */
  groups(): GroupDistribution[] {
    const out: GroupDistribution[] = [];
    for (const [group, g] of this.#groups) {
      const sorted = [0, 1, 2].map((w) => {
        const a = new Float64Array(g.slots.length);
        g.slots.forEach((s, k) => {
          a[k] = this.#peak[s * W + w];
        });
        return a.sort();
      }) as unknown as GroupDistribution['sortedPeaks'];
      out.push({
        group,
        requests: g.requests,
        clients: g.slots.length,
        windows: sorted.map((a) => ({
          p50: quantile(a, 0.5),
          p90: quantile(a, 0.9),
          p99: quantile(a, 0.99),
          max: a.length === 0 ? 0 : a[a.length - 1],
        })) as unknown as GroupDistribution['windows'],
        sortedPeaks: sorted,
      });
    }
    return out.sort((a, b) => b.requests - a.requests);
  }

  #grow(): void {
    if (this.#size * W <= this.#window.length) return;
    const n = Math.max(1024, this.#window.length * 2);
    const grow = (a: Float64Array) => {
      const b = new Float64Array(n);
      b.set(a);
      return b;
    };
    this.#window = grow(this.#window);
    this.#count = grow(this.#count);
    this.#peak = grow(this.#peak);
  }
}

/**
 * The value at a quantile of ascending values by the nearest-rank method: the smallest value with at least `q` of
 * the values at or below it (so the p99 of 100 clients is the 99th smallest).
 *
 * @returns 0 for no values.
 */
export function quantile(sorted: Float64Array, q: number): number {
  if (sorted.length === 0) return 0;
  const rank = Math.min(sorted.length, Math.max(1, Math.ceil(q * sorted.length)));
  return sorted[rank - 1];
}
