import { HyperLogLog, hashString, SEED_A, SEED_B } from './distinct-count.js';
import { FirstRequests } from './first-requests.js';
import { SlidingPeaks } from './sliding-peaks.js';

export { RATE_WINDOWS_MS } from './sliding-peaks.js';

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
  /** Distinct clients (estimated when `estimated`). */
  readonly clients: number;
  /** True when `clients` and `oneRequest` are estimates: the logs had more clients than the tables hold. */
  readonly estimated: boolean;
  /** Clients that sent this group one request: left out of the peaks (no limit refuses a first request). */
  readonly oneRequest: number;
  /**
   * Per window of {@link RATE_WINDOWS_MS}: percentiles over the clients with more than one request of each
   * client's busiest sliding window.
   */
  readonly windows: readonly [Percentiles, Percentiles, Percentiles];
  /** Per window: the peaks of those clients, sorted ascending (for proposing a limit at any share). */
  readonly sortedPeaks: readonly [Float64Array, Float64Array, Float64Array];
  /** Per window: the requests of the client at the same place of `sortedPeaks`. */
  readonly sortedRequests: readonly [Float64Array, Float64Array, Float64Array];
}

/** One group's clients: their slots in the peak table, in order of arrival. */
interface Group {
  readonly id: number;
  /** A tier: every request is in one, so the tiers' sketches give the headline count. */
  readonly tier: boolean;
  requests: number;
  /** Clients seen once and not yet again: exact while the first-request table has dropped nothing. */
  once: number;
  readonly slots: number[];
  readonly byClient: Map<string, number>;
  /** The group's distinct clients, once the counts are estimated. */
  sketch: HyperLogLog | undefined;
}

/**
 * Per-client peak request counts over sliding 1 s, 1 min and 1 h windows, per group ({@link SlidingPeaks}). A
 * client enters a group's distribution with its second request ({@link FirstRequests} keeps the first), so the
 * distribution is over clients with more than one request and clients that sent one are only counted: they can
 * neither be limited nor take the room of the clients that can. Clients are counted exactly while the tables hold
 * them all; past either cap (the pairs tracked, or a first request dropped for room), every group counts its
 * clients in a HyperLogLog sketch from then on, seeded with the clients it had, and the counts are marked
 * estimated. Memory is bounded: the peak table at `cap` pairs, the first-request table, a sketch per group (16 KB
 * for a tier, 4 KB for an endpoint).
 */
export class RateDistribution {
  readonly #groups = new Map<string, Group>();
  readonly #list: Group[] = [];
  readonly #peaks = new SlidingPeaks();
  readonly #first: FirstRequests;
  readonly #cap: number;
  #estimating = false;
  /** Requests of clients past the pair cap, counted but not in any distribution. */
  untracked = 0;

  /**
   * @param cap - the most (group, client) pairs whose peaks are kept.
   * @param firstRequests - the entries of the first-request table (a power of two).
   */
  constructor(cap: number, firstRequests = 1 << 20) {
    this.#cap = cap;
    this.#first = new FirstRequests(firstRequests);
  }

  /** True once client counts are estimates. */
  get estimating(): boolean {
    return this.#estimating;
  }

  /**
   * Counts one request of a client in a group. Requests come in time order (a replay's reorder window); one
   * earlier than its client's last is counted at that last time.
   *
   * @param group - the endpoint pattern or tier.
   * @param client - the caller's key.
   * @param timeMs - the request's time.
   * @param cost - tokens the request costs.
   */
  add(group: string, client: string, timeMs: number, cost = 1): void {
    let g = this.#groups.get(group);
    if (g === undefined) {
      g = {
        id: this.#list.length,
        tier: group.startsWith('tier:'),
        requests: 0,
        once: 0,
        slots: [],
        byClient: new Map(),
        sketch: undefined,
      };
      if (this.#estimating) g.sketch = sketchOf(g);
      this.#groups.set(group, g);
      this.#list.push(g);
    }
    g.requests++;
    const slot = g.byClient.get(client);
    if (slot !== undefined) {
      this.#peaks.add(slot, timeMs, cost);
      return;
    }
    const a = hashString(client, SEED_A);
    const b = hashString(client, SEED_B);
    g.sketch?.add(a);
    const first = this.#first;
    if (!first.take(g.id, a, b, timeMs, cost)) {
      g.once++;
      if (first.evictedGroup >= 0 && !this.#estimating) this.#estimate(first.evictedGroup, first.evictedA);
      return;
    }
    g.once--;
    const s = this.#peaks.size;
    if (s >= this.#cap) {
      this.untracked += 2;
      if (!this.#estimating) this.#estimate(-1, 0);
      return;
    }
    this.#peaks.open();
    g.byClient.set(client, s);
    g.slots.push(s);
    this.#peaks.add(s, first.timeMs, first.cost);
    this.#peaks.add(s, timeMs, cost);
  }

  /**
   * Distinct clients over the tiers (every request is in one; `prefix` is their groups' prefix, `tier:`): the sum
   * of their counts, or with estimates the estimate of the union of their sketches.
   */
  clients(prefix: string): { readonly count: number; readonly estimated: boolean } {
    const gs: Group[] = [];
    for (const [name, g] of this.#groups) if (name.startsWith(prefix) && g.tier) gs.push(g);
    if (!this.#estimating)
      return { count: gs.reduce((n, g) => n + g.slots.length + g.once, 0), estimated: false };
    const union = new HyperLogLog(TIER_P);
    for (const g of gs) if (g.sketch !== undefined) union.merge(g.sketch);
    return { count: Math.max(Math.round(union.estimate()), 0), estimated: true };
  }

  /** The groups, most requested first. */
  groups(): GroupDistribution[] {
    const out: GroupDistribution[] = [];
    for (const [group, g] of this.#groups) {
      const n = g.slots.length;
      const peaks = [0, 1, 2].map(() => new Float64Array(n));
      const requests = [0, 1, 2].map(() => new Float64Array(n));
      for (let w = 0; w < 3; w++) {
        const order = g.slots.map((s) => s);
        order.sort((x, y) => this.#peaks.peak(x, w) - this.#peaks.peak(y, w));
        order.forEach((s, k) => {
          peaks[w][k] = this.#peaks.peak(s, w);
          requests[w][k] = this.#peaks.requests(s);
        });
      }
      // An estimate is never above the group's requests, nor below the clients measured one by one.
      const clients =
        g.sketch === undefined
          ? n + g.once
          : Math.max(n, Math.min(g.requests, Math.round(g.sketch.estimate())));
      out.push({
        group,
        requests: g.requests,
        clients,
        estimated: g.sketch !== undefined,
        oneRequest: clients - n,
        windows: peaks.map((a) => ({
          p50: quantile(a, 0.5),
          p90: quantile(a, 0.9),
          p99: quantile(a, 0.99),
          max: a.length === 0 ? 0 : a[a.length - 1],
        })) as unknown as GroupDistribution['windows'],
        sortedPeaks: peaks as unknown as GroupDistribution['sortedPeaks'],
        sortedRequests: requests as unknown as GroupDistribution['sortedRequests'],
      });
    }
    return out.sort((a, b) => b.requests - a.requests);
  }

  /** Bytes the peak table takes now (its share of a recommendation's memory). */
  get peakBytes(): number {
    return this.#peaks.bytes;
  }

  /**
   * From now on clients are estimated: every group gets a sketch of the clients it has (tracked ones and those
   * seen once, with the entry about to be dropped), and each new client of a group is added to it.
   */
  #estimate(droppedGroup: number, a: number): void {
    this.#estimating = true;
    for (const g of this.#list) {
      const sketch = sketchOf(g);
      for (const key of g.byClient.keys()) sketch.addString(key);
      g.sketch = sketch;
    }
    this.#first.forEach((group, x) => {
      this.#list[group].sketch?.add(x);
    });
    if (droppedGroup >= 0) this.#list[droppedGroup].sketch?.add(a);
  }
}

/** Register bits of a tier's sketch (16 KB, a standard error of 0.8%) and of an endpoint's (4 KB, 1.6%). */
const TIER_P = 14;
const RULE_P = 12;

function sketchOf(g: Group): HyperLogLog {
  return new HyperLogLog(g.tier ? TIER_P : RULE_P);
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
