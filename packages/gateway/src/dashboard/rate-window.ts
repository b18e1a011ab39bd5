import {
  type Clock,
  type Decision,
  integerOption,
  monotonicClock,
  objectOption,
  rejectUnknownKeys,
  SingleDecision,
} from 'sluice';
import { type DecisionLabels, type ExemptLabels, type FailureMode, NoopMetrics } from 'sluice/metrics';
import type { RateRow, SeriesInfo, SeriesKind } from './dashboard-frame.js';

/** Options of {@link RateWindow}. */
export interface RateWindowOptions {
  /** Seconds of history kept. Integer from 10 to 3600; default 300 (five minutes). */
  readonly historySeconds?: number;
  /** The most series kept; counts of further combinations go to one `(other)` series. Default 500. */
  readonly maxSeries?: number;
  /** The clock seconds are cut from (a `ManualClock` in tests). Default the monotonic clock. */
  readonly clock?: Clock;
  /** Wall-clock milliseconds, to label seconds with Unix times. Default `Date.now`. */
  readonly wallNow?: () => number;
  /**
   * Completed seconds held back from readers (`lastCompleted`), so that counts merged from other threads
   * (see {@link RateWindow.merge}) arrive before a second is shown. Integer from 0 to 10; default 0.
   */
  readonly settleSeconds?: number;
}

/**
 * What one thread's window sends the thread that serves the dashboard (see {@link RateWindow.ship} and
 * {@link RateWindow.merge}): only what is new since the previous shipment, so a second is sent once.
 */
export interface RateShipment {
  /** Series created since the previous shipment, in id order. */
  readonly series: readonly SeriesInfo[];
  /** The seconds completed since the previous shipment, labelled with Unix times. */
  readonly rows: readonly RateRow[];
}

const CHANNELS = 3;
const OTHER = '(other)';

interface Series extends SeriesInfo {
  /** `historySeconds` slots of three channels each, indexed by second modulo the history. */
  readonly counts: Float64Array;
}

/**
 * Per-second counts of the last minutes of decisions, for the live dashboard: requests by tier (allowed, limited,
 * exempt), policies by tier (allowed, limited, denied by another policy), exempt requests by reason, and store
 * trouble. It is a metrics sink (see `LimiterMetrics`): the gateway records into it beside Prometheus.
 *
 * Recording adds to a preallocated ring slot found through two map lookups, so a decision allocates nothing once
 * its series exists; seconds roll lazily when a call or a read sees a later second, so there is no timer. Memory
 * is `maxSeries x historySeconds x 3` numbers at most; series come from configuration (policies, tiers, reasons),
 * never from keys.
 *
 * @example
 * ```ts
 * const rates = new RateWindow({ historySeconds: 300 });
 * rates.recordDecision(decision, { tier: 'standard' });
 * rates.rowsAfter(rates.lastCompleted() - 60); // the last minute, one row per second
 * ```
 */
export class RateWindow extends NoopMetrics {
  /** Seconds of history kept. */
  readonly historySeconds: number;
  readonly #maxSeries: number;
  readonly #clock: Clock;
  readonly #series: Series[] = [];
  // One map per kind in a plain object: the kind is a compile-time constant at every call site.
  readonly #byKind: Record<SeriesKind, Map<string, Map<string, Series>>> = {
    requests: new Map(),
    policy: new Map(),
    exempt: new Map(),
    store: new Map(),
  };
  readonly #wallBase: number;
  readonly #secBase: number;
  #current: number;
  /** Where the current second's three channels start in each series' counts. */
  #slot: number;
  #failover = false;
  readonly #settle: number;
  /** Sender side: series and seconds already shipped. */
  #shippedSeries = 0;
  #shippedUntil: number;
  /** Receiver side: each sending thread's series ids, mapped to this window's series. */
  readonly #remote = new Map<number, Series[]>();
  /** Requests by tier (their name is always empty), and policies by name then tier: read on every request. */
  readonly #requests = new Map<string, Series>();
  readonly #policies: Map<string, Map<string, Series>>;

  /** @throws SluiceError `ERR_INVALID_OPTION` for an invalid option. */
  constructor(options: RateWindowOptions = {}) {
    super();
    const o = objectOption('RateWindow options', options) as RateWindowOptions;
    rejectUnknownKeys('RateWindow options', o, [
      'historySeconds',
      'maxSeries',
      'clock',
      'wallNow',
      'settleSeconds',
    ]);
    this.historySeconds = integerOption('historySeconds', o.historySeconds, 10, 3600, 300);
    this.#maxSeries = integerOption('maxSeries', o.maxSeries, 1, 10_000, 500);
    this.#settle = integerOption('settleSeconds', o.settleSeconds, 0, 10, 0);
    this.#clock = o.clock ?? monotonicClock;
    const clockMs = this.#clock.now();
    this.#secBase = Math.floor(clockMs / 1000);
    this.#shippedUntil = this.#secBase - 1;
    this.#current = this.#secBase;
    this.#slot = (this.#current % this.historySeconds) * CHANNELS;
    this.#byKind.requests.set('', this.#requests);
    this.#policies = this.#byKind.policy;
    // Seconds are cut from the monotonic clock (a wall-clock jump must not reorder them) and labelled with the
    // wall time they correspond to. The offset is rounded to whole seconds, so windows of several threads on
    // one shared clock label every second alike (their readings straddle no second boundary).
    this.#wallBase = this.#secBase + Math.round(((o.wallNow ?? Date.now)() - clockMs) / 1000);
  }

  override recordDecision(decision: Decision, labels?: DecisionLabels): void {
    this.#roll();
    const tier = labels?.tier;
    const slot = this.#slot;
    if (decision.reason === 'store_unavailable_open' || decision.reason === 'store_unavailable') {
      this.#find('store', labels?.store ?? '', '').counts[slot + (decision.allowed ? 1 : 2)]++;
    }
    // The gateway records the public-auth charge of a failed credential as a decision without a tier; it is not
    // a request of its own (the request is counted once, as denied or exempt), so only its policy counts.
    if (tier !== undefined) {
      const requests = this.#requests.get(tier) ?? this.#find('requests', '', tier);
      requests.counts[slot + (decision.allowed ? 0 : 1)]++;
    }
    const t = tier ?? '';
    if (decision instanceof SingleDecision) {
      // Read the policy off the decision: its outcome list is built lazily and would allocate.
      const limited = decision.limited && !decision.policy.shadow;
      this.#policy(decision.policy.name, t).counts[slot + (limited ? 1 : decision.allowed ? 0 : 2)]++;
      return;
    }
    const outcomes = decision.outcomes;
    for (let i = 0; i < outcomes.length; i++) {
      const o = outcomes[i];
      const limited = o.limited && !o.policy.shadow;
      this.#policy(o.policy.name, t).counts[slot + (limited ? 1 : decision.allowed ? 0 : 2)]++;
    }
  }

  override recordExempt(labels: ExemptLabels): void {
    this.#roll();
    const slot = this.#slot;
    this.#find('requests', '', labels.tier ?? '').counts[slot + 2]++;
    this.#find('exempt', labels.reason, labels.tier ?? '').counts[slot]++;
  }

  /** A request refused by a run-time block: a denied request of its tier (no policy decided it). */
  recordBlocked(tier: string | undefined): void {
    this.#roll();
    this.#find('requests', '', tier ?? '').counts[this.#slot + 1]++;
  }

  override recordStoreError(store: string): void {
    this.#roll();
    this.#find('store', store, '').counts[this.#slot]++;
  }

  override recordFailover(_store: string, _mode: FailureMode, active: boolean): void {
    this.#failover = active;
  }

  /** True after a `recordFailover(..., true)` until the matching `recordFailover(..., false)`. */
  get failoverActive(): boolean {
    return this.#failover;
  }

  /** Every series so far, in creation order (ids are positions). */
  series(): SeriesInfo[] {
    return this.#series.map(({ id, kind, name, tier }) => ({ id, kind, name, tier }));
  }

  /** Series created after the first `known` ones. */
  seriesAfter(known: number): SeriesInfo[] {
    return this.series().slice(known);
  }

  /** The number of series so far. */
  get seriesCount(): number {
    return this.#series.length;
  }

  /**
   * The clock second of the newest completed second shown (the current one is still counting, and
   * `settleSeconds` more are held back for counts from other threads).
   */
  lastCompleted(): number {
    this.#roll();
    return this.#current - 1 - this.#settle;
  }

  /**
   * The series and completed seconds recorded since the previous call, for {@link RateWindow.merge} in the
   * thread that serves the dashboard (`sluice serve --threads`).
   */
  ship(): RateShipment {
    this.#roll();
    const series = this.#series
      .slice(this.#shippedSeries)
      .map(({ id, kind, name, tier }) => ({ id, kind, name, tier }));
    this.#shippedSeries = this.#series.length;
    const last = this.#current - 1;
    const rows = this.rowsAfter(this.#shippedUntil, last);
    this.#shippedUntil = last;
    return { series, rows };
  }

  /**
   * Adds another thread's shipment into this window, second by second (matched by their Unix labels, so both
   * windows must run on one clock, as the threads of one process do with the shared time clock). Seconds
   * outside the history are left out.
   *
   * @param source - the sending thread, which names its series ids.
   * @param shipment - what its {@link RateWindow.ship} returned.
   */
  merge(source: number, shipment: RateShipment): void {
    let known = this.#remote.get(source);
    if (known === undefined) {
      known = [];
      this.#remote.set(source, known);
    }
    for (const info of shipment.series) known[info.id] = this.#find(info.kind, info.name, info.tier);
    this.#roll();
    const h = this.historySeconds;
    for (const row of shipment.rows) {
      const s = row.t - this.#wallBase + this.#secBase;
      if (s > this.#current || s <= this.#current - h || s < this.#secBase) continue;
      const slot = (s % h) * CHANNELS;
      for (const id of Object.keys(row.v)) {
        const local = known[Number(id)];
        const v = row.v[id];
        if (local === undefined || v === undefined) continue;
        const c = local.counts;
        c[slot] += v[0];
        c[slot + 1] += v[1];
        c[slot + 2] += v[2];
      }
    }
  }

  /** The Unix time, in seconds, of a clock second. */
  unixOf(second: number): number {
    return this.#wallBase + (second - this.#secBase);
  }

  /**
   * The completed seconds after clock second `after` (exclusive) up to `last` (inclusive; default the newest
   * completed second), oldest first, at most the history; seconds before the window was created are left out.
   */
  rowsAfter(after: number, last: number = this.lastCompleted()): RateRow[] {
    // The ring holds the current second and the history before it; older slots have been reused.
    const first = Math.max(after + 1, this.#current - this.historySeconds + 1, this.#secBase);
    const rows: RateRow[] = [];
    for (let s = first; s <= last; s++) {
      const slot = (s % this.historySeconds) * CHANNELS;
      const v: Record<string, [number, number, number]> = {};
      for (const series of this.#series) {
        const c = series.counts;
        if (c[slot] !== 0 || c[slot + 1] !== 0 || c[slot + 2] !== 0)
          v[series.id] = [c[slot], c[slot + 1], c[slot + 2]];
      }
      rows.push({ t: this.unixOf(s), v });
    }
    return rows;
  }

  /** Moves to the clock's second, clearing the slots of the seconds that passed (at most the whole ring). */
  #roll(): void {
    const now = Math.floor(this.#clock.now() / 1000);
    if (now <= this.#current) return;
    const h = this.historySeconds;
    const from = Math.max(this.#current + 1, now - h + 1);
    for (let s = from; s <= now; s++) {
      const slot = (s % h) * CHANNELS;
      for (const series of this.#series) series.counts.fill(0, slot, slot + CHANNELS);
    }
    this.#current = now;
    this.#slot = (now % h) * CHANNELS;
  }

  /** A policy's series for a tier: two map reads for a known pair, once per policy of a request. */
  #policy(name: string, tier: string): Series {
    return this.#policies.get(name)?.get(tier) ?? this.#find('policy', name, tier);
  }

  #find(kind: SeriesKind, name: string, tier: string): Series {
    const names = this.#byKind[kind];
    let tiers = names.get(name);
    let series = tiers?.get(tier);
    if (series !== undefined) return series;
    // Past the cap, further combinations share one `(other)` series per kind (created even past the cap, so
    // at most four more).
    if (this.#series.length >= this.#maxSeries && !(name === OTHER && tier === '')) {
      return this.#find(kind, OTHER, '');
    }
    if (tiers === undefined) {
      tiers = new Map();
      names.set(name, tiers);
    }
    series = {
      id: this.#series.length,
      kind,
      name,
      tier,
      counts: new Float64Array(this.historySeconds * CHANNELS),
    };
    this.#series.push(series);
    tiers.set(tier, series);
    return series;
  }
}
