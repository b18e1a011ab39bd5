import type { AdaptiveLimitOptions } from '../config/resolve-overload.js';

/** Round trips (windows of `limit` responses) between two measurements of the baseline, at least 2000 responses. */
export const PROBE_ROUNDS = 200;
/** Responses a measurement of the baseline takes, at the `min` limit. */
const PROBE_SAMPLES = 25;
/** The fewest responses a window of samples holds before the limit moves. */
const MIN_WINDOW = 10;

/**
 * A concurrency limit learned from latency, a gradient controller in the manner of Envoy's adaptive concurrency
 * filter and Netflix's Gradient2. The baseline is the minimum latency sampled at low concurrency: at start and
 * then every {@link PROBE_ROUNDS} round trips, the limit drops to `min` until {@link PROBE_SAMPLES} responses
 * admitted at that concurrency have ended, and the fastest of them is the baseline (counted in responses, not
 * timed: a busy upstream is re-measured sooner, an idle one not at all; about 2% of the time is spent there). In between, the limit moves once per window of
 * about `limit` responses (one round trip's worth), from the window's mean latency: within `tolerance` times the
 * baseline it grows toward `limit + sqrt(limit)` (the square root: quick from a small limit, careful at a large
 * one), beyond it shrinks toward `limit x gradient`, the gradient being `tolerance x baseline / mean` (at least
 * 0.5); `smoothing` is how far of the way one window moves it. It grows only when the window used at least half
 * of it (an idle upstream tells nothing about its capacity), and stays within `min` and `max`. Against an upstream
 * whose latency grows once more than its capacity runs at once, it settles about `tolerance` times that capacity.
 */
export class AdaptiveLimit {
  readonly options: AdaptiveLimitOptions;
  #limit: number;
  #baseline = 0;
  /** Responses until the next measurement of the baseline; negative while one runs. */
  #untilProbe = 0;
  #probeMin = Number.POSITIVE_INFINITY;
  #probeCount = 0;
  /** The limit to go back to after a measurement. */
  #resume: number;
  #windowSum = 0;
  #windowCount = 0;
  #windowBusiest = 0;

  /** @param options - min, max, initial, smoothing, tolerance. */
  constructor(options: AdaptiveLimitOptions) {
    this.options = options;
    this.#resume = Math.min(options.max, Math.max(options.min, options.initial));
    this.#limit = this.#resume;
    this.#startProbe();
  }

  /** The limit now, a whole number of requests in flight. */
  get limit(): number {
    return Math.floor(this.#limit);
  }

  /** The baseline latency, in milliseconds (0 before it was measured). */
  get baselineMs(): number {
    return this.#baseline;
  }

  /**
   * Learns from one response that completed.
   *
   * @param latencyMs - the time from admission to the response's end.
   * @param inFlight - the requests in flight when it was admitted (itself included).
   */
  sample(latencyMs: number, inFlight: number): void {
    if (!(latencyMs >= 0)) return;
    const rtt = Math.max(latencyMs, 0.001);
    if (this.#untilProbe < 0) {
      // Only a request admitted at low concurrency measures the baseline; the others drain.
      if (inFlight <= this.options.min) this.#probe(rtt);
      return;
    }
    if (--this.#untilProbe === 0) {
      this.#resume = this.#limit;
      this.#startProbe();
      return;
    }
    this.#windowSum += rtt;
    this.#windowBusiest = Math.max(this.#windowBusiest, inFlight);
    if (++this.#windowCount < Math.max(MIN_WINDOW, this.#limit)) return;
    const mean = this.#windowSum / this.#windowCount;
    const busiest = this.#windowBusiest;
    this.#windowSum = 0;
    this.#windowCount = 0;
    this.#windowBusiest = 0;
    const o = this.options;
    const l = this.#limit;
    let target: number;
    if (mean <= o.tolerance * this.#baseline) {
      if (busiest < l / 2) return;
      target = l + Math.sqrt(l);
    } else target = l * Math.max(0.5, (o.tolerance * this.#baseline) / mean);
    this.#limit = Math.min(o.max, Math.max(o.min, l + (target - l) * o.smoothing));
  }

  #startProbe(): void {
    this.#untilProbe = -1;
    this.#probeMin = Number.POSITIVE_INFINITY;
    this.#probeCount = PROBE_SAMPLES;
    this.#limit = this.options.min;
  }

  #probe(rtt: number): void {
    if (rtt < this.#probeMin) this.#probeMin = rtt;
    if (--this.#probeCount > 0) return;
    this.#baseline = this.#probeMin;
    this.#untilProbe = Math.max(2000, PROBE_ROUNDS * Math.floor(this.#resume));
    this.#limit = this.#resume;
    this.#windowSum = 0;
    this.#windowCount = 0;
    this.#windowBusiest = 0;
  }
}
