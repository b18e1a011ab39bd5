import { ErrorCode, SluiceError } from '../core/index.js';

/** The error of a call that Redis did not answer in time. */
export function timeoutError(ms: number): SluiceError {
  return new SluiceError(ErrorCode.StoreUnavailable, `Redis did not answer within ${ms} ms`, {
    timeoutMs: ms,
  });
}

/** True for the error {@link withTimeout} rejects with. */
export function isTimeout(error: unknown): boolean {
  return (
    error instanceof SluiceError &&
    error.code === ErrorCode.StoreUnavailable &&
    typeof error.details.timeoutMs === 'number'
  );
}

/**
 * Settles like `promise`, or rejects with {@link timeoutError} after `ms` milliseconds (`onTimeout` runs first).
 * The call itself is not cancelled: a command already sent may still run on the server.
 */
export function withTimeout<T>(promise: Promise<T>, ms: number, onTimeout: () => void): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const start = performance.now();
    // Node starts a timer from the event loop's cached time, which can be behind performance.now(): a timer
    // may fire a little early. Re-arm for the rest, so that calls queued behind this one (expired by
    // performance.now() in the batch queue) have really waited `ms` when it gives up.
    const fire = () => {
      const left = ms - (performance.now() - start);
      if (left > 0) {
        timer = setTimeout(fire, Math.ceil(left));
        return;
      }
      onTimeout();
      reject(timeoutError(ms));
    };
    let timer = setTimeout(fire, ms);
    promise.then(
      (v) => {
        clearTimeout(timer);
        resolve(v);
      },
      (e) => {
        clearTimeout(timer);
        reject(e);
      },
    );
  });
}

/** How late a timeout timer may fire, in milliseconds, before the event loop counts as having been busy. */
const LATE_MS = 2;

/** One script call in flight, as {@link CallTimeouts} tracks it. */
export interface TrackedCall<T> {
  /** What the call carries, handed back to the timeout callback. */
  readonly payload: T;
  /** performance.now() when the call was sent. */
  readonly sentAt: number;
  /** True once the call settled or timed out: whichever comes second is ignored. */
  over: boolean;
}

/**
 * Timeouts of the script calls in flight, with one timer for all of them instead of a timer and a wrapping promise
 * per call (at one call in flight, arming and clearing a timer per call was a measurable share of a decision's
 * client time, see D-R10). Every call has the same timeout, so calls expire in the order they were sent: the
 * timer waits for the oldest call still in flight and, when it fires, expires every call whose time is up and
 * waits again for the next one.
 */
export class CallTimeouts<T> {
  readonly #ms: number;
  readonly #expire: (call: TrackedCall<T>) => void;
  #calls: TrackedCall<T>[] = [];
  #head = 0;
  #timer: ReturnType<typeof setTimeout> | undefined;
  /** performance.now() when the armed timer is due. */
  #due = 0;
  /** True while the expiry waits for the event loop to read its sockets once (see `#sweepNow`). */
  #deferred = false;
  readonly #sweep = () => this.#sweepNow();
  readonly #expireDue = () => this.#expireNow();

  /**
   * @param ms - how long a call may take.
   * @param expire - runs once for a call that did not settle within `ms` (the call is then over: its late
   * answer is ignored).
   */
  constructor(ms: number, expire: (call: TrackedCall<T>) => void) {
    this.#ms = ms;
    this.#expire = expire;
  }

  /** Starts tracking a call sent now. */
  start(payload: T): TrackedCall<T> {
    const call: TrackedCall<T> = { payload, sentAt: performance.now(), over: false };
    this.#calls.push(call);
    if (this.#timer === undefined && !this.#deferred) this.#arm(this.#ms);
    return call;
  }

  /**
   * The call settled. Returns false when it had already timed out (its answer must be ignored), else true and
   * stops tracking it.
   */
  finish(call: TrackedCall<T>): boolean {
    if (call.over) return false;
    call.over = true;
    this.#drop();
    return true;
  }

  /** Calls still tracked (for tests). */
  get size(): number {
    let n = 0;
    for (let i = this.#head; i < this.#calls.length; i++) if (!this.#calls[i].over) n++;
    return n;
  }

  /** Forgets the calls at the head that are over; compacts the list now and then. */
  #drop(): void {
    const calls = this.#calls;
    while (this.#head < calls.length && calls[this.#head].over) this.#head++;
    if (this.#head === calls.length) {
      calls.length = 0;
      this.#head = 0;
    } else if (this.#head >= 1024 && this.#head * 2 >= calls.length) {
      this.#calls = calls.slice(this.#head);
      this.#head = 0;
    }
  }

  #arm(ms: number): void {
    this.#due = performance.now() + ms;
    this.#timer = setTimeout(this.#sweep, ms);
    // A call in flight keeps the process alive through its socket; the timer alone must not.
    this.#timer.unref?.();
  }

  /**
   * The timer fired. Late (the event loop was busy: a burst of requests on a loaded thread), the calls whose time
   * is up are given up only after the loop has read its sockets once (`setImmediate` runs after that phase): their
   * answers may already sit unread there. Redis answered in time, this thread did not look, and giving the calls
   * up would send them to the failure mode (an open one admitting them past the limit, D-G78).
   */
  #sweepNow(): void {
    this.#timer = undefined;
    if (performance.now() - this.#due > LATE_MS) {
      this.#deferred = true;
      setImmediate(this.#expireDue);
      return;
    }
    this.#expireNow();
  }

  #expireNow(): void {
    this.#deferred = false;
    this.#drop();
    const now = performance.now();
    while (this.#head < this.#calls.length) {
      const call = this.#calls[this.#head];
      if (!call.over) {
        // Node starts a timer from the event loop's cached time, which can be behind performance.now(): a timer
        // may fire a little early. Wait for the rest, so that a call has really had `ms` when it is given up.
        const left = this.#ms - (now - call.sentAt);
        if (left > 0) {
          this.#arm(Math.ceil(left));
          return;
        }
        call.over = true;
        this.#expire(call);
      }
      this.#head++;
    }
    this.#drop();
  }
}
