import { type DeadlineTimer, REAL_TIMER } from './body-deadline.js';

/** The error of a request that waited `upstream.queueTimeout` for an upstream connection and got none. */
export class QueueTimeoutError extends Error {
  readonly code = 'UPSTREAM_QUEUE_TIMEOUT';
  /** @param queueTimeoutMs - the wait it was allowed. */
  constructor(readonly queueTimeoutMs: number) {
    super(`no upstream connection became free within ${queueTimeoutMs} ms`);
  }
}

/** A request waiting at a {@link ConnectionGate}; {@link GateWaiter.cancel} takes it out of the line. */
export interface GateWaiter {
  /** Leaves the line (the client went away): neither its grant nor its expiry is called after this. */
  cancel(): void;
}

/** Settings of a {@link ConnectionGate} beyond its size; tests pass fakes. */
export interface GateTimers {
  /** The timer of queue timeouts (default: Node.js timers). */
  readonly timer?: DeadlineTimer;
  /** Runs the hand-off of a freed place to the next waiter (default: `setImmediate`). */
  readonly defer?: (run: () => void) => void;
}

class Waiter implements GateWaiter {
  handle: unknown;
  timed = false;
  constructor(
    readonly gate: ConnectionGate,
    readonly grant: () => void,
    readonly expire: () => void,
  ) {}

  cancel(): void {
    this.gate.forget(this);
  }
}

/**
 * The places of an upstream pool, one per connection, and the line of requests waiting for one. undici's own pool
 * queue has no timeout and no way out: a queued request whose client left, or that the gateway gave up on, is
 * still written on the next free connection (and its abort then destroys that connection). So the gateway hands
 * undici at most as many requests as it has connections and keeps the waiting here, where a wait is bounded by
 * `upstream.queueTimeout` and a waiter that leaves is gone for good.
 *
 * Free places go to waiters first come, first served; a new request does not pass the line.
 */
export class ConnectionGate {
  readonly #slots: number;
  readonly #timer: DeadlineTimer;
  readonly #defer: (run: () => void) => void;
  readonly #waiters = new Set<Waiter>();
  #busy = 0;
  #handing = false;
  #emptied: (() => void)[] = [];
  readonly #handOff = () => {
    this.#handing = false;
    for (const w of this.#waiters) {
      if (this.#busy >= this.#slots) break;
      this.#waiters.delete(w);
      if (w.timed) this.#timer.cancel(w.handle);
      this.#busy++;
      w.grant();
    }
    this.#notifyEmpty();
  };

  /**
   * @param slots - the places, `upstream.connections`.
   * @param timers - the timer and the deferral (tests pass fakes).
   */
  constructor(slots: number, timers: GateTimers = {}) {
    this.#slots = slots;
    this.#timer = timers.timer ?? REAL_TIMER;
    this.#defer = timers.defer ?? setImmediate;
  }

  /** Places taken. */
  get busy(): number {
    return this.#busy;
  }

  /** Requests waiting for a place. */
  get waiting(): number {
    return this.#waiters.size;
  }

  /** Takes a place when one is free and nobody waits for it: the path of every request while the pool has room. */
  tryEnter(): boolean {
    if (this.#busy >= this.#slots || this.#waiters.size > 0) return false;
    this.#busy++;
    return true;
  }

  /**
   * Joins the line (after {@link tryEnter} said no). Exactly one of `grant` (the place is now the caller's, to
   * {@link leave}) and `expire` is called, unless the waiter is cancelled first.
   *
   * @param timeoutMs - the longest wait; `0` waits without bound.
   * @param grant - called with a place taken.
   * @param expire - called when the wait ran out; the waiter is out of the line.
   * @returns the waiter, to cancel when the client goes away.
   */
  wait(timeoutMs: number, grant: () => void, expire: () => void): GateWaiter {
    const w = new Waiter(this, grant, expire);
    this.#waiters.add(w);
    if (timeoutMs > 0) {
      w.timed = true;
      w.handle = this.#timer.start(() => {
        if (!this.#waiters.delete(w)) return;
        w.timed = false;
        w.expire();
        this.#notifyEmpty();
      }, timeoutMs);
    }
    // A place may be free already (a hand-off pending): the waiter is served with it.
    if (this.#busy < this.#slots) this.#scheduleHandOff();
    return w;
  }

  /** Gives a place back. */
  leave(): void {
    this.#busy--;
    if (this.#waiters.size > 0) this.#scheduleHandOff();
  }

  /** Takes a waiter out of the line, its timer with it ({@link GateWaiter.cancel}). */
  forget(w: GateWaiter): void {
    const waiter = w as Waiter;
    if (!this.#waiters.delete(waiter)) return;
    if (waiter.timed) this.#timer.cancel(waiter.handle);
    this.#notifyEmpty();
  }

  /**
   * Resolves once nobody waits (at once when nobody does): every waiter was granted its place, expired or left.
   * Closing the pool of a replaced upstream waits for it, so that a request still in line is sent, as undici sends
   * the requests of its own queue before a close completes, rather than failed on a closed pool.
   */
  noneWaiting(): Promise<void> {
    if (this.#waiters.size === 0) return Promise.resolve();
    return new Promise((resolve) => this.#emptied.push(resolve));
  }

  #notifyEmpty(): void {
    if (this.#waiters.size > 0 || this.#emptied.length === 0) return;
    for (const resolve of this.#emptied.splice(0)) resolve();
  }

  #scheduleHandOff(): void {
    if (this.#handing) return;
    this.#handing = true;
    // Not at once: the place is given back from undici's completion callback, before undici itself marks that
    // connection free. A request dispatched then would wait in undici's queue after all; a turn later it finds the
    // connection free.
    this.#defer(this.#handOff);
  }
}
