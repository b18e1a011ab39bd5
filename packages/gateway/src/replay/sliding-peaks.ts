/** The windows per-client rates are measured over, in milliseconds: 1 s, 1 min, 1 h. */
export const RATE_WINDOWS_MS = [1000, 60_000, 3_600_000] as const;

/**
 * The steps the windows slide in: a tenth of a second, three seconds, five minutes. A window's count holds the
 * requests of the last `RATE_WINDOWS_MS[w] / STEPS_MS[w]` steps and the current one, so it may hold requests up to
 * one step older than the window (never fewer than the window holds). A log with times to the second gets the
 * 1 s window exactly: requests stamped one second apart may have come within a second, and count together.
 */
export const STEPS_MS = [100, 3000, 300_000] as const;

const STEPS = STEPS_MS.map((s, w) => RATE_WINDOWS_MS[w] / s + 1);
const COUNTERS = [0, STEPS[0], STEPS[0] + STEPS[1]];
const META = STEPS[0] + STEPS[1] + STEPS[2];
const REQUESTS = META + 9;
/** Floats per client: the step counters of the three windows, each window's last step, sum and peak, requests. */
export const STRIDE = REQUESTS + 1;

/**
 * The busiest sliding window of each client, over 1 s, 1 min and 1 h: per client and window, a ring of step
 * counters (a count per step), the sum of the ring and its largest value so far, all in one Float64Array (55
 * numbers, 440 bytes a client). Epoch-aligned windows cut a burst across a boundary in two (7 requests across a
 * second boundary counted as 3 and 4); a sliding one counts it whole. Requests come in time order; one earlier than
 * its client's last step counts in that step.
 */
export class SlidingPeaks {
  #d = new Float64Array(0);
  #size = 0;

  /** Clients held. */
  get size(): number {
    return this.#size;
  }

  /** Bytes of the table. */
  get bytes(): number {
    return this.#d.byteLength;
  }

  /** Makes room for one more client, numbered {@link SlidingPeaks.size} before the call. */
  open(): void {
    const base = this.#size * STRIDE;
    if (base + STRIDE > this.#d.length) {
      const grown = new Float64Array(Math.max(1024 * STRIDE, this.#d.length * 2));
      grown.set(this.#d);
      this.#d = grown;
    }
    for (let w = 0; w < 3; w++) this.#d[base + META + 3 * w] = Number.NEGATIVE_INFINITY;
    this.#size++;
  }

  /**
   * Counts a request of client `slot`.
   *
   * @param timeMs - its time.
   * @param cost - the tokens it costs.
   */
  add(slot: number, timeMs: number, cost: number): void {
    const d = this.#d;
    const base = slot * STRIDE;
    d[base + REQUESTS]++;
    for (let w = 0; w < 3; w++) {
      const n = STEPS[w];
      const c0 = base + COUNTERS[w];
      const m = base + META + 3 * w;
      const step = Math.floor(timeMs / STEPS_MS[w]);
      let last = d[m];
      if (step > last) {
        if (step - last >= n) {
          d.fill(0, c0, c0 + n);
          d[m + 1] = 0;
        } else {
          // The steps that left the window: their counts leave the sum.
          let sum = d[m + 1];
          for (let j = last + 1; j <= step; j++) {
            const r = j % n;
            const i = c0 + (r < 0 ? r + n : r);
            sum -= d[i];
            d[i] = 0;
          }
          d[m + 1] = sum;
        }
        d[m] = step;
        last = step;
      }
      const r = last % n;
      d[c0 + (r < 0 ? r + n : r)] += cost;
      const sum = d[m + 1] + cost;
      d[m + 1] = sum;
      if (sum > d[m + 2]) d[m + 2] = sum;
    }
  }

  /** Client `slot`'s busiest count over window `w` of {@link RATE_WINDOWS_MS}. */
  peak(slot: number, w: number): number {
    return this.#d[slot * STRIDE + META + 3 * w + 2];
  }

  /** Client `slot`'s requests. */
  requests(slot: number): number {
    return this.#d[slot * STRIDE + REQUESTS];
  }
}
