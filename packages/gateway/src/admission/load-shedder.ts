import type { AdaptiveLimitOptions, Priority, ShedderSettings } from '../config/resolve-overload.js';
import { AdaptiveLimit } from './adaptive-limit.js';
import { type InFlightCount, LocalInFlight } from './in-flight-count.js';

/** Each priority's place in the counts of requests shed, most important first. */
const PRIORITY_INDEX: Readonly<Record<Priority, number>> = Object.freeze({
  critical: 0,
  normal: 1,
  sheddable: 2,
});

/**
 * Requests in flight toward the upstream as a whole, and the limit they are held to: fixed, or learned from
 * latency ({@link AdaptiveLimit}). A request is admitted while the requests in flight stay below its priority's
 * share of the limit: `critical` the whole limit, `normal` the limit less the reserve, `sheddable` that share less
 * the reserve again (`limit x (1 - reserve)^2`), so at the limit `sheddable` is refused first, then `normal`, and
 * `critical` only beyond the whole limit. One per gateway process, kept across reloads, so the count of requests
 * in flight never starts over while they run.
 */
export class LoadShedder {
  #settings: ShedderSettings;
  #adaptive: AdaptiveLimit | undefined;
  readonly #inFlight: InFlightCount;
  readonly #shed = [0, 0, 0];
  #lastWarnMs = Number.NEGATIVE_INFINITY;
  #shedSinceWarn = 0;

  /**
   * @param settings - the `overload:` section.
   * @param count - where requests in flight are counted: this thread's own (default), or every thread's.
   */
  constructor(settings: ShedderSettings, count: InFlightCount = new LocalInFlight()) {
    this.#settings = settings;
    this.#inFlight = count;
    this.#adaptive = settings.adaptive === undefined ? undefined : new AdaptiveLimit(settings.adaptive);
  }

  /**
   * Takes new settings (a reload): the requests in flight stay counted; an adaptive limit keeps what it learned
   * unless its parameters changed.
   */
  configure(settings: ShedderSettings): void {
    const a = settings.adaptive;
    if (a === undefined) this.#adaptive = undefined;
    else if (this.#adaptive === undefined || !sameAdaptive(this.#adaptive.options, a)) {
      this.#adaptive = new AdaptiveLimit(a);
    }
    this.#settings = settings;
  }

  /** The limit of requests in flight now. */
  get limit(): number {
    return this.#adaptive?.limit ?? this.#settings.maxInFlight ?? 0;
  }

  /** Requests admitted and not ended. */
  get inFlight(): number {
    return this.#inFlight.value;
  }

  /** Requests refused so far, per priority: critical, normal, sheddable. */
  get shed(): readonly number[] {
    return this.#shed;
  }

  /** The share of the limit a priority may use: the whole limit, less the reserve, less it twice. */
  capacityOf(priority: Priority): number {
    const limit = this.limit;
    const keep = 1 - this.#settings.reserve;
    return priority === 'critical' ? limit : priority === 'normal' ? limit * keep : limit * keep * keep;
  }

  /**
   * Admits a request of `priority` when the requests in flight are below its share of the limit, and counts it;
   * else counts it as shed.
   *
   * @returns the requests in flight with this one when admitted (the caller must {@link LoadShedder.release} it
   *   exactly once), or 0 when shed.
   */
  tryEnter(priority: Priority): number {
    const at = this.#inFlight.enterBelow(this.capacityOf(priority));
    if (at > 0) return at;
    this.#shed[PRIORITY_INDEX[priority]]++;
    this.#shedSinceWarn++;
    return 0;
  }

  /**
   * An admitted request ended.
   *
   * @param latencyMs - from admission to the end of its response.
   * @param completed - whether the response was written whole: only those teach the adaptive limit.
   * @param atEntry - what {@link LoadShedder.tryEnter} returned for it.
   */
  release(latencyMs: number, completed: boolean, atEntry: number): void {
    if (completed) this.#adaptive?.sample(latencyMs, atEntry);
    this.#inFlight.leave();
  }

  /**
   * Whether a warning about shedding is due: at most one a second while requests are shed.
   *
   * @param nowMs - milliseconds of a monotonic clock.
   * @returns the requests shed since the last warning, or 0 when none is due.
   */
  warnDue(nowMs: number): number {
    if (this.#shedSinceWarn === 0 || nowMs - this.#lastWarnMs < 1000) return 0;
    const n = this.#shedSinceWarn;
    this.#shedSinceWarn = 0;
    this.#lastWarnMs = nowMs;
    return n;
  }
}

function sameAdaptive(a: AdaptiveLimitOptions, b: AdaptiveLimitOptions): boolean {
  return (
    a.min === b.min &&
    a.max === b.max &&
    a.initial === b.initial &&
    a.smoothing === b.smoothing &&
    a.tolerance === b.tolerance
  );
}
