import type { ResponseEnd, ResponseObserver, Verdict } from 'sluice/http';
import type { GatewayConfig } from '../config/gateway-config.js';
import { TIER_RULE_PREFIX } from '../limits/gateway-limits.js';

/**
 * The most requests held at once: a log whose requests overlap more than this (a million in flight) has the
 * earliest ends played early, counted in {@link ReplayHolds.endedEarly}, so memory stays bounded whatever the log.
 */
export const MAX_HELD = 1 << 20;

/** How a replayed response ended when the log says nothing more: written whole. */
const COMPLETED: ResponseEnd = Object.freeze({
  completed: true,
  status: 200,
  bytesSent: 0,
  bytesReceived: 0,
});

/**
 * Plays the ends of replayed responses to their verdicts' observers at the time each response ended: the line's
 * time plus its logged duration, so that a request holds its concurrency slots from its start for its duration
 * (D-G112). The pending ends are a min-heap by time, drained as the log's clock passes them (no timer), and all
 * ended at the end of the log. A request of a concurrency rule whose line has no duration gives its slots back at
 * once and is counted in {@link ReplayHolds.withoutDuration}: its concurrency limit was not replayed.
 */
export class ReplayHolds {
  /** Whether the configuration has a concurrency limit (a tier, an endpoint rule or a class); else nothing is held. */
  readonly active: boolean;
  /** Requests of a concurrency rule that held their slots for their logged duration. */
  held = 0;
  /** Requests of a concurrency rule whose line had no duration: their slots came back at once. */
  withoutDuration = 0;
  /** Ends played before their time because {@link MAX_HELD} requests were held at once. */
  endedEarly = 0;
  /** The rules that count requests in flight, by the name a verdict's `rules` gives them. */
  readonly #rules: ReadonlySet<string>;
  #times = new Float64Array(64);
  #observers: (ResponseObserver | undefined)[] = new Array<ResponseObserver | undefined>(64).fill(undefined);
  #ends: (ResponseEnd | undefined)[] = new Array<ResponseEnd | undefined>(64).fill(undefined);
  #size = 0;

  /** @param config - the replayed configuration. */
  constructor(config: GatewayConfig) {
    const rules = new Set<string>();
    for (const t of Object.values(config.tiers))
      if (t.concurrency !== undefined) rules.add(`${TIER_RULE_PREFIX}${t.name}`);
    for (const e of config.endpoints) if (e.concurrency !== undefined) rules.add(e.name);
    this.#rules = rules;
    this.active = rules.size > 0;
  }

  /** Requests whose end is still to come. */
  get size(): number {
    return this.#size;
  }

  /** The time of the earliest pending end, or `Infinity` when none is pending. */
  get next(): number {
    return this.#size === 0 ? Number.POSITIVE_INFINITY : this.#times[0];
  }

  /**
   * Ends an admitted verdict's observer when its response ended: at `startMs + durationMs` for a request of a
   * concurrency rule with a duration, else now.
   *
   * @param v - the verdict (nothing happens without an observer).
   * @param durationMs - the line's duration, or -1 for none.
   * @param startMs - when the request was admitted (its line's time, plus its wait in a queue).
   * @param end - how the response ended, as the log tells it (default: written whole).
   */
  release(v: Verdict, durationMs: number, startMs: number, end: ResponseEnd = COMPLETED): void {
    const o = v.observer;
    if (o === undefined) return;
    if (!this.#holdsSlot(v.rules)) {
      o.end(end);
      return;
    }
    if (durationMs < 0) {
      this.withoutDuration++;
      o.end(end);
      return;
    }
    this.held++;
    if (this.#size === MAX_HELD) {
      this.endedEarly++;
      this.#pop();
    }
    this.#push(startMs + durationMs, o, end);
  }

  /** Ends every response that ended at or before `nowMs`, earliest first. */
  drain(nowMs: number): void {
    while (this.#size > 0 && this.#times[0] <= nowMs) this.#pop();
  }

  /** Ends every pending response (the end of the log). */
  drainAll(): void {
    while (this.#size > 0) this.#pop();
  }

  #holdsSlot(rules: readonly string[] | undefined): boolean {
    if (rules === undefined) return false;
    for (let i = 0; i < rules.length; i++) if (this.#rules.has(rules[i])) return true;
    return false;
  }

  #push(at: number, o: ResponseObserver, end: ResponseEnd): void {
    if (this.#size === this.#times.length) this.#grow();
    const times = this.#times;
    const obs = this.#observers;
    const ends = this.#ends;
    let i = this.#size++;
    // Sift up: parents later than `at` move down.
    while (i > 0) {
      const parent = (i - 1) >> 1;
      if (times[parent] <= at) break;
      times[i] = times[parent];
      obs[i] = obs[parent];
      ends[i] = ends[parent];
      i = parent;
    }
    times[i] = at;
    obs[i] = o;
    ends[i] = end;
  }

  /** Removes the earliest end and plays it. */
  #pop(): void {
    const times = this.#times;
    const obs = this.#observers;
    const ends = this.#ends;
    const o = obs[0] as ResponseObserver;
    const end = ends[0] as ResponseEnd;
    const n = --this.#size;
    const at = times[n];
    const lastO = obs[n];
    const lastEnd = ends[n];
    obs[n] = undefined;
    ends[n] = undefined;
    if (n > 0) {
      // Sift the last entry down from the root.
      let i = 0;
      for (;;) {
        let child = 2 * i + 1;
        if (child >= n) break;
        if (child + 1 < n && times[child + 1] < times[child]) child++;
        if (times[child] >= at) break;
        times[i] = times[child];
        obs[i] = obs[child];
        ends[i] = ends[child];
        i = child;
      }
      times[i] = at;
      obs[i] = lastO;
      ends[i] = lastEnd;
    }
    o.end(end);
  }

  #grow(): void {
    const n = Math.min(this.#times.length * 2, MAX_HELD);
    const times = new Float64Array(n);
    times.set(this.#times);
    this.#times = times;
    this.#observers.length = n;
    this.#ends.length = n;
  }
}
