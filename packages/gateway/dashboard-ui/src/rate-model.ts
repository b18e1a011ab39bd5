import type { RateRow, SeriesInfo } from '../../src/dashboard/dashboard-frame.js';

/** What the chart and the tables show: all requests, one tier's requests, or one policy's checks. */
export type View =
  | { readonly kind: 'all' }
  | { readonly kind: 'tier'; readonly tier: string }
  | { readonly kind: 'policy'; readonly policy: string };

/** Three aligned channels over the model's times. */
export interface Channels {
  readonly times: readonly number[];
  readonly channels: readonly [number[], number[], number[]];
}

/** One policy and tier, summed over a span of seconds. */
export interface PolicyTotals {
  readonly policy: string;
  readonly tier: string;
  readonly allowed: number;
  readonly limited: number;
  readonly deniedByOther: number;
}

/**
 * The browser's copy of the server's rate window: the last seconds as aligned arrays (one time axis, three
 * channels per series), filled from the stream's `snapshot` and extended by each `tick`.
 */
export class RateModel {
  readonly times: number[] = [];
  readonly #series = new Map<number, SeriesInfo>();
  readonly #values = new Map<number, [number[], number[], number[]]>();
  #capacity: number;

  /** @param capacity - seconds kept (the server's history). */
  constructor(capacity: number) {
    this.#capacity = Math.max(2, capacity);
  }

  /** Every series known, in id order. */
  get series(): SeriesInfo[] {
    return [...this.#series.values()];
  }

  /** Starts over from a snapshot. */
  reset(capacity: number, series: readonly SeriesInfo[], rows: readonly RateRow[]): void {
    this.#capacity = Math.max(2, capacity);
    this.times.length = 0;
    this.#series.clear();
    this.#values.clear();
    this.append(series, rows);
  }

  /** Adds new series and the rows that follow the last one held. */
  append(series: readonly SeriesInfo[], rows: readonly RateRow[]): void {
    for (const s of series) {
      if (this.#series.has(s.id)) continue;
      this.#series.set(s.id, s);
      const n = this.times.length;
      this.#values.set(s.id, [new Array(n).fill(0), new Array(n).fill(0), new Array(n).fill(0)]);
    }
    for (const row of rows) {
      const last = this.times[this.times.length - 1];
      if (last !== undefined && row.t <= last) continue;
      this.times.push(row.t);
      for (const [id, ch] of this.#values) {
        const v = row.v[id];
        ch[0].push(v?.[0] ?? 0);
        ch[1].push(v?.[1] ?? 0);
        ch[2].push(v?.[2] ?? 0);
      }
    }
    const excess = this.times.length - this.#capacity;
    if (excess > 0) {
      this.times.splice(0, excess);
      for (const ch of this.#values.values()) for (const c of ch) c.splice(0, excess);
    }
  }

  /** The channels of a view over every time held: requests (allowed, limited, exempt) or a policy's outcomes. */
  channels(view: View): Channels {
    const n = this.times.length;
    const out: [number[], number[], number[]] = [
      new Array(n).fill(0),
      new Array(n).fill(0),
      new Array(n).fill(0),
    ];
    for (const s of this.#series.values()) {
      if (!matches(s, view)) continue;
      const ch = this.#values.get(s.id);
      if (ch === undefined) continue;
      for (let c = 0; c < 3; c++) for (let i = 0; i < n; i++) out[c][i] += ch[c][i];
    }
    return { times: this.times, channels: out };
  }

  /** Sums of a view's channels over the last `seconds`. */
  totals(view: View, seconds: number): [number, number, number] {
    const { channels } = this.channels(view);
    return sumTail(channels, seconds);
  }

  /** Per policy and tier, the sums over the last `seconds`, busiest first. */
  policyTotals(seconds: number): PolicyTotals[] {
    const out: PolicyTotals[] = [];
    for (const s of this.#series.values()) {
      if (s.kind !== 'policy') continue;
      const ch = this.#values.get(s.id);
      if (ch === undefined) continue;
      const [allowed, limited, deniedByOther] = sumTail(ch, seconds);
      out.push({ policy: s.name, tier: s.tier, allowed, limited, deniedByOther });
    }
    return out.sort(
      (a, b) =>
        b.allowed + b.limited + b.deniedByOther - (a.allowed + a.limited + a.deniedByOther) ||
        a.policy.localeCompare(b.policy) ||
        a.tier.localeCompare(b.tier),
    );
  }

  /** Store trouble over the last `seconds`: errors, decisions failed open, decisions failed closed. */
  storeTotals(seconds: number): [number, number, number] {
    const sum: [number, number, number] = [0, 0, 0];
    for (const s of this.#series.values()) {
      if (s.kind !== 'store') continue;
      const ch = this.#values.get(s.id);
      if (ch === undefined) continue;
      const t = sumTail(ch, seconds);
      for (let c = 0; c < 3; c++) sum[c] += t[c];
    }
    return sum;
  }

  /** Exempt requests by reason over the last `seconds`. */
  exemptByReason(seconds: number): Map<string, number> {
    const out = new Map<string, number>();
    for (const s of this.#series.values()) {
      if (s.kind !== 'exempt') continue;
      const ch = this.#values.get(s.id);
      if (ch === undefined) continue;
      out.set(s.name, (out.get(s.name) ?? 0) + sumTail(ch, seconds)[0]);
    }
    return out;
  }

  /** The tiers and policies seen, for the view picker. */
  dimensions(): { tiers: string[]; policies: string[] } {
    const tiers = new Set<string>();
    const policies = new Set<string>();
    for (const s of this.#series.values()) {
      if (s.kind === 'requests' && s.tier !== '') tiers.add(s.tier);
      if (s.kind === 'policy') policies.add(s.name);
    }
    return { tiers: [...tiers].sort(), policies: [...policies].sort() };
  }
}

function matches(s: SeriesInfo, view: View): boolean {
  if (view.kind === 'all') return s.kind === 'requests';
  if (view.kind === 'tier') return s.kind === 'requests' && s.tier === view.tier;
  return s.kind === 'policy' && s.name === view.policy;
}

function sumTail(ch: readonly number[][], seconds: number): [number, number, number] {
  const out: [number, number, number] = [0, 0, 0];
  for (let c = 0; c < 3; c++) {
    const a = ch[c];
    for (let i = Math.max(0, a.length - seconds); i < a.length; i++) out[c] += a[i];
  }
  return out;
}
