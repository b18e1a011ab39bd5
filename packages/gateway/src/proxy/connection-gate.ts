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
    readonly seq: number,
    readonly body: boolean,
    readonly grant: () => void,
    readonly expire: () => void,
  ) {}

  cancel(): void {
    this.gate.forget(this);
  }
}

/** The first waiter of a line, in arrival order (a `Set` iterates in insertion order). */
function first(line: Set<Waiter>): Waiter | undefined {
  for (const w of line) return w;
  return undefined;
}

/**
 * The places of an upstream pool, one per connection, and the line of requests waiting for one. undici's own pool
 * queue has no timeout and no way out: a queued request whose client left, or that the gateway gave up on, is
 * still written on the next free connection (and its abort then destroys that connection). So the gateway hands
 * undici at most as many requests as it has connections and keeps the waiting here, where a wait is bounded by
 * `upstream.queueTimeout` and a waiter that leaves is gone for good.
 *
 * Requests with a body hold at most a share of the places (`upstream.maxBodies`) until their body has arrived
 * whole: a body arrives at the client's pace, which D-G47 lets run for hours, and without the share slow but
 * legal uploads from enough addresses would hold every connection. The places beyond the share are kept for
 * requests without a body, which a slow client cannot hold.
 *
 * Free places go to waiters first come, first served; a new request does not pass a waiter that could have the
 * place. A body waiting for the share is the one waiter that others pass: it could not use the place anyway.
 */
export class ConnectionGate {
  readonly #slots: number;
  readonly #timer: DeadlineTimer;
  readonly #defer: (run: () => void) => void;
  /** Requests without a body waiting, in arrival order. */
  readonly #plain = new Set<Waiter>();
  /** Requests with a body waiting, in arrival order. */
  readonly #bodied = new Set<Waiter>();
  #seq = 0;
  #busy = 0;
  #bodies = 0;
  /** The share of bodies in effect: the one the last request with a body read; `0` is no share of its own. */
  #bodyCap = 0;
  #handing = false;
  #emptied: (() => void)[] = [];
  readonly #handOff = () => {
    this.#handing = false;
    while (this.#busy < this.#slots) {
      const plain = first(this.#plain);
      const bodied = this.#bodyFree() ? first(this.#bodied) : undefined;
      const w =
        plain === undefined ? bodied : bodied === undefined || plain.seq < bodied.seq ? plain : bodied;
      if (w === undefined) break;
      (w.body ? this.#bodied : this.#plain).delete(w);
      if (w.timed) this.#timer.cancel(w.handle);
      this.#busy++;
      if (w.body) this.#bodies++;
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

  /** Places taken by requests whose body has not arrived whole. */
  get bodies(): number {
    return this.#bodies;
  }

  /** Requests waiting for a place. */
  get waiting(): number {
    return this.#plain.size + this.#bodied.size;
  }

  /**
   * Takes a place when one is free for this request and no waiter could have it: the path of every request while
   * the pool has room.
   *
   * @param bodyCap - for a request with a body, the share of places bodies may hold (`upstream.maxBodies`, `0`:
   *   no share of its own); `undefined` for a request without a body.
   */
  tryEnter(bodyCap?: number): boolean {
    if (this.#busy >= this.#slots || this.#plain.size > 0) return false;
    if (bodyCap !== undefined) {
      this.#bodyCap = bodyCap;
      if (this.#bodied.size > 0 || !this.#bodyFree()) return false;
      this.#bodies++;
    } else if (this.#bodied.size > 0 && this.#bodyFree()) return false;
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
   * @param bodyCap - as for {@link tryEnter}.
   * @returns the waiter, to cancel when the client goes away.
   */
  wait(timeoutMs: number, grant: () => void, expire: () => void, bodyCap?: number): GateWaiter {
    const body = bodyCap !== undefined;
    if (body) this.#bodyCap = bodyCap;
    const w = new Waiter(this, ++this.#seq, body, grant, expire);
    const line = body ? this.#bodied : this.#plain;
    line.add(w);
    if (timeoutMs > 0) {
      w.timed = true;
      w.handle = this.#timer.start(() => {
        if (!line.delete(w)) return;
        w.timed = false;
        w.expire();
        this.#notifyEmpty();
      }, timeoutMs);
    }
    // A place may be free already (a hand-off pending): the waiter is served with it.
    if (this.#busy < this.#slots && (!body || this.#bodyFree())) this.#scheduleHandOff();
    return w;
  }

  /**
   * Gives a place back.
   *
   * @param body - whether the place still counts a body that had not arrived whole (see {@link bodyArrived}).
   */
  leave(body = false): void {
    this.#busy--;
    if (body) this.#bodies--;
    if (this.waiting > 0) this.#scheduleHandOff();
  }

  /**
   * The body of a request holding a place has arrived whole: the place stays taken until {@link leave}, but no
   * longer counts in the share of bodies (waiting for a slow upstream's answer is not the client's doing).
   */
  bodyArrived(): void {
    this.#bodies--;
    if (this.#bodied.size > 0) this.#scheduleHandOff();
  }

  /** Takes a waiter out of the line, its timer with it ({@link GateWaiter.cancel}). */
  forget(w: GateWaiter): void {
    const waiter = w as Waiter;
    if (!(waiter.body ? this.#bodied : this.#plain).delete(waiter)) return;
    if (waiter.timed) this.#timer.cancel(waiter.handle);
    this.#notifyEmpty();
  }

  /**
   * Resolves once nobody waits (at once when nobody does): every waiter was granted its place, expired or left.
   * Closing the pool of a replaced upstream waits for it, so that a request still in line is sent, as undici sends
   * the requests of its own queue before a close completes, rather than failed on a closed pool.
   */
  noneWaiting(): Promise<void> {
    if (this.waiting === 0) return Promise.resolve();
    return new Promise((resolve) => this.#emptied.push(resolve));
  }

  #bodyFree(): boolean {
    return this.#bodyCap === 0 || this.#bodies < this.#bodyCap;
  }

  #notifyEmpty(): void {
    if (this.waiting > 0 || this.#emptied.length === 0) return;
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
