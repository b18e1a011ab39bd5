import type { Clock } from './clock.js';

interface Sleeper {
  readonly at: number;
  readonly resolve: () => void;
}

/**
 * A clock that moves only when told to: the clock of every test in Sluice, and usable in simulations. Waits
 * resolve in time order as `advance` passes their deadline.
 *
 * @example
 * ```ts
 * const clock = new ManualClock();
 * const store = new MemoryStore({ clock });
 * clock.advance(500); // half a second passes
 * ```
 */
export class ManualClock implements Clock {
  #now: number;
  #sleepers: Sleeper[] = [];

  /** @param start - the initial reading in milliseconds (default 0). */
  constructor(start = 0) {
    this.#now = start;
  }

  /** The current reading. */
  now(): number {
    return this.#now;
  }

  /** Moves time forward by `ms` and resolves every wait whose deadline has passed. */
  advance(ms: number): void {
    this.set(this.#now + ms);
  }

  /** Sets the reading (it may go backwards, to test clamping) and resolves due waits. */
  set(ms: number): void {
    this.#now = ms;
    // A simulation sets the time for every event; most of them find nobody waiting.
    if (this.#sleepers.length === 0) return;
    const due = this.#sleepers.filter((s) => s.at <= ms).sort((a, b) => a.at - b.at);
    this.#sleepers = this.#sleepers.filter((s) => s.at > ms);
    for (const s of due) s.resolve();
  }

  /** Number of waits not yet due; lets a test wait until its code under test is asleep. */
  get pendingSleeps(): number {
    return this.#sleepers.length;
  }

  sleep(ms: number, signal?: AbortSignal): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      if (signal?.aborted) {
        reject(signal.reason);
        return;
      }
      if (ms <= 0) {
        resolve();
        return;
      }
      const sleeper: Sleeper = {
        at: this.#now + ms,
        resolve: () => {
          signal?.removeEventListener('abort', onAbort);
          resolve();
        },
      };
      const onAbort = () => {
        this.#sleepers = this.#sleepers.filter((s) => s !== sleeper);
        reject((signal as AbortSignal).reason);
      };
      signal?.addEventListener('abort', onAbort, { once: true });
      this.#sleepers.push(sleeper);
    });
  }
}
