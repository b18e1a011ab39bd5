import type { InFlightView, UnitsView } from './dashboard-frame.js';
import type { SharedKeyFact } from './limited-key-facts.js';
import type { RateShipment, RateWindow } from './rate-window.js';

/** One row of a thread's top limited keys, as it travels between threads. */
export interface LimitedKeyRow {
  readonly hash: string;
  readonly policy: string;
  readonly count: number;
  /** The largest overestimate in `count` (space-saving). */
  readonly error: number;
}

/**
 * What each thread of `sluice serve --threads` other than the first sends the first one, twice a second: the
 * dashboard's data that is kept per thread (the shared store already holds the buckets of every thread).
 */
export interface ThreadFeed {
  /** Counts per second since the previous feed. */
  readonly rates: RateShipment;
  /** The thread's own limited keys, most denied first (hashed with the secret every thread shares). */
  readonly top: readonly LimitedKeyRow[];
  /** Requests the thread is serving now. */
  readonly inflight: number;
  /** Who the keys of `top` are, as far as this thread knows (it limited them). */
  readonly facts?: readonly SharedKeyFact[];
  /**
   * The thread's own requests in flight per concurrency policy: the slots are one shared count, but which
   * requests hold them is known only to the thread serving them, as for the in-flight gauge of `/metrics`.
   */
  readonly concurrency?: readonly InFlightView[] | undefined;
  /** Units the thread charged per policy since it started (the dashboard's units card). */
  readonly units?: readonly UnitsView[] | undefined;
}

/** The top limited keys as the dashboard and the admin API read them (`TopLimitedKeys` is one). */
export interface LimitedKeysView {
  /** The `n` keys denied most often, highest first. */
  top(n: number): readonly LimitedKeyRow[];
  /** The hash under which `key` is listed. */
  hashKey(key: string): string;
}

/** Rows of its top limited keys each thread sends: the whole summary of the default capacity. */
export const TOP_SHIPPED = 100;

/**
 * The first thread's view of the others, so that its dashboard and admin API show the gateway as one: their
 * per-second counts are merged into its rate window as they arrive, and their latest top limited keys and
 * requests in flight are added to its own when read.
 *
 * @example
 * ```ts
 * const peers = new ThreadPeers(gateway.rates);
 * worker.on('message', (m) => peers.receive(m.source, m.feed));
 * const top = peers.topKeys(ownTopLimitedKeys).top(10);
 * ```
 */
export class ThreadPeers {
  readonly #rates: RateWindow;
  readonly #latest = new Map<number, ThreadFeed>();

  /** @param rates - the first thread's rate window, which the other threads' counts are added to. */
  constructor(rates: RateWindow) {
    this.#rates = rates;
  }

  /** Takes in thread `source`'s feed. */
  receive(source: number, feed: ThreadFeed): void {
    this.#rates.merge(source, feed.rates);
    this.#latest.set(source, feed);
  }

  /**
   * Requests the other threads hold under a concurrency policy, as of their latest feeds.
   *
   * @param policy - the policy's name.
   */
  inFlightOf(policy: string): number {
    let n = 0;
    for (const f of this.#latest.values()) {
      if (f.concurrency === undefined) continue;
      for (const c of f.concurrency) if (c.policy === policy) n += c.inFlight;
    }
    return n;
  }

  /**
   * The units charged per policy over every thread, largest first: each thread's totals since start summed by
   * policy and unit.
   *
   * @param own - this thread's totals.
   */
  units(own: readonly UnitsView[]): UnitsView[] {
    const sums = new Map<string, { policy: string; unit: string; units: number }>();
    const add = (rows: readonly UnitsView[]) => {
      for (const r of rows) {
        const id = `${r.policy}\n${r.unit}`;
        const s = sums.get(id);
        if (s === undefined) sums.set(id, { policy: r.policy, unit: r.unit, units: r.units });
        else s.units += r.units;
      }
    };
    add(own);
    for (const f of this.#latest.values()) if (f.units !== undefined) add(f.units);
    return [...sums.values()].sort((a, b) => b.units - a.units);
  }

  /** Requests the other threads are serving, as of their latest feeds. */
  get inflight(): number {
    let n = 0;
    for (const f of this.#latest.values()) n += f.inflight;
    return n;
  }

  /**
   * The top limited keys over every thread: each key's counts summed by hash, the policy of its largest count.
   *
   * @param own - this thread's summary.
   */
  topKeys(own: LimitedKeysView): LimitedKeysView {
    return {
      // One secret hashes keys in every thread, so this thread's hash is every thread's.
      hashKey: (key) => own.hashKey(key),
      top: (n) => {
        const sums = new Map<string, { policy: string; count: number; error: number; largest: number }>();
        const add = (rows: readonly LimitedKeyRow[]) => {
          for (const r of rows) {
            const s = sums.get(r.hash);
            if (s === undefined)
              sums.set(r.hash, { policy: r.policy, count: r.count, error: r.error, largest: r.count });
            else {
              s.count += r.count;
              s.error += r.error;
              if (r.count > s.largest) {
                s.largest = r.count;
                s.policy = r.policy;
              }
            }
          }
        };
        add(own.top(TOP_SHIPPED));
        for (const f of this.#latest.values()) add(f.top);
        return [...sums]
          .sort((a, b) => b[1].count - a[1].count)
          .slice(0, n)
          .map(([hash, s]) => ({ hash, policy: s.policy, count: s.count, error: s.error }));
      },
    };
  }
}
