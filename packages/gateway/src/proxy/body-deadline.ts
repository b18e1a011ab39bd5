/** The pace a request body must keep: `server.bodyTimeout` and `server.bodyMinRate` of the configuration. */
export interface BodyPace {
  /** Grace before the rate counts, in milliseconds; `0` turns the rule off. */
  readonly bodyTimeoutMs: number;
  /** Bytes that each extend the deadline by one second; `0` wants the whole body within the grace. */
  readonly bodyMinRate: number;
}

/**
 * The time source and timer of a {@link BodyDeadline}: the process's own in the gateway ({@link REAL_TIMER}), a
 * fake clock in tests.
 */
export interface DeadlineTimer {
  /** Milliseconds on a clock that never goes back. */
  now(): number;
  /** Calls `fire` once, `ms` from now; returns what {@link DeadlineTimer.cancel} takes. */
  start(fire: () => void, ms: number): unknown;
  cancel(handle: unknown): void;
}

/** Node.js timers and `performance.now()`. */
export const REAL_TIMER: DeadlineTimer = Object.freeze({
  now: () => performance.now(),
  start: (fire: () => void, ms: number) => {
    const t = setTimeout(fire, ms);
    // A request in flight keeps the process up by its socket already; its timer need not.
    t.unref();
    return t;
  },
  cancel: (handle: unknown) => clearTimeout(handle as ReturnType<typeof setTimeout>),
});

/** The error a request body that missed its {@link BodyDeadline} is cut with. */
export class BodyTimeoutError extends Error {
  readonly code = 'BODY_TIMEOUT';
  /**
   * @param received - bytes of the body that had arrived.
   * @param pace - the pace it missed.
   */
  constructor(
    readonly received: number,
    readonly pace: BodyPace,
  ) {
    super(
      `request body too slow: ${received} bytes received, fewer than ${pace.bodyMinRate} bytes per second after ${pace.bodyTimeoutMs} ms`,
    );
  }
}

/**
 * The deadline of one request body, as Apache's mod_reqtimeout sets it (`body=20,MinRate=500`): the start, plus
 * the grace, plus one second per `bodyMinRate` bytes received, plus the time the gateway itself held the body back
 * (the upstream not reading is no fault of the client's). One timer per body, re-armed lazily: bytes only move
 * the deadline, and the timer, when it fires early, arms once more for where the deadline has moved.
 */
export class BodyDeadline {
  readonly #pace: BodyPace;
  readonly #onExpire: (e: BodyTimeoutError) => void;
  readonly #timer: DeadlineTimer;
  readonly #start: number;
  #received = 0;
  #heldMs = 0;
  #heldSince = -1;
  #handle: unknown;
  #armed = false;
  #done = false;
  readonly #fire = () => {
    this.#armed = false;
    this.#check();
  };

  /**
   * Starts the clock of a body (when the gateway begins to read it, after admission).
   *
   * @param pace - the grace and the minimum rate; a `bodyTimeoutMs` of 0 is the caller's to skip.
   * @param onExpire - called at most once, when the deadline passes.
   * @param timer - the clock and timer (tests pass a fake one).
   */
  constructor(pace: BodyPace, onExpire: (e: BodyTimeoutError) => void, timer: DeadlineTimer = REAL_TIMER) {
    this.#pace = pace;
    this.#onExpire = onExpire;
    this.#timer = timer;
    this.#start = timer.now();
    this.#arm(pace.bodyTimeoutMs);
  }

  /** Counts bytes that arrived; the timer is left alone (see the class). */
  received(bytes: number): void {
    this.#received += bytes;
  }

  /** The gateway stops reading the body (its upstream is full): the time until {@link release} does not count. */
  hold(): void {
    if (this.#done || this.#heldSince >= 0) return;
    this.#heldSince = this.#timer.now();
  }

  /** The gateway reads again. */
  release(): void {
    if (this.#done || this.#heldSince < 0) return;
    this.#heldMs += this.#timer.now() - this.#heldSince;
    this.#heldSince = -1;
    // A timer that fired while the body was held armed nothing (see #check).
    if (!this.#armed) this.#check();
  }

  /** The body ended or the request closed: no more deadline. */
  finish(): void {
    if (this.#done) return;
    this.#done = true;
    if (this.#armed) this.#timer.cancel(this.#handle);
    this.#armed = false;
  }

  #deadline(): number {
    const p = this.#pace;
    const earned = p.bodyMinRate > 0 ? (this.#received * 1000) / p.bodyMinRate : 0;
    return this.#start + this.#heldMs + p.bodyTimeoutMs + earned;
  }

  #check(): void {
    if (this.#done || this.#heldSince >= 0) return;
    const left = this.#deadline() - this.#timer.now();
    if (left > 0) {
      this.#arm(left);
      return;
    }
    this.#done = true;
    this.#onExpire(new BodyTimeoutError(this.#received, this.#pace));
  }

  #arm(ms: number): void {
    // Whole milliseconds up: a timer due a fraction early would fire, find time left, and arm again.
    this.#handle = this.#timer.start(this.#fire, Math.ceil(ms));
    this.#armed = true;
  }
}
