import type { Clock } from '../core/index.js';
import { isTimeout, withTimeout } from './call-timeout.js';
import type { FailureMode } from './failure-mode.js';
import type { RedisStoreCounters } from './redis-store-stats.js';
import type { StoreEvents } from './store-events.js';

/**
 * Runs `run` once after `ms` milliseconds; the returned function cancels it. The store passes one on its own
 * clock: an unref'd timer on real time (so a failed store never keeps a process alive), or its injected clock's
 * `sleep` (a `ManualClock` in tests), so a probe is due exactly when the store's time says so.
 */
export type ProbeTimer = (ms: number, run: () => void) => () => void;

/** Settings and collaborators of a {@link Breaker}. */
export interface BreakerOptions {
  readonly clock: Clock;
  /** Schedules the next probe while switched. */
  readonly timer: ProbeTimer;
  readonly failureMode: FailureMode;
  /** Consecutive failed calls that switch to the failure mode. */
  readonly failureThreshold: number;
  /** Milliseconds (store clock) between probes while switched. */
  readonly probeIntervalMs: number;
  /** How long a probe may take. */
  readonly timeoutMs: number;
  /**
   * The cheap round trip that tells whether Redis answers again. The store loads its script with it where the
   * client can, so that a server back from a restart has the script before the first call needs it.
   */
  readonly ping: () => Promise<unknown>;
  /**
   * Subscribes to the client's connection opening again, when the client tells (see `RedisScriptClient`); returns
   * the unsubscribe function or `undefined`.
   */
  readonly onConnect?: (listener: () => void) => (() => void) | undefined;
  /** Told when Redis answered the round trip sent on a new connection (Redis may have lost every bucket). */
  readonly reconnected?: () => void;
  readonly counters: RedisStoreCounters;
  readonly events: StoreEvents;
}

/**
 * The breaker in front of Redis: Redis is asked while it answers; after `failureThreshold` failed calls in a row
 * the store stops asking and follows its failure mode, and the first answer switches back. While switched, one
 * timer per store (not per key, and none while Redis answers) probes Redis every `probeIntervalMs`, whether or
 * not requests arrive: recovery never waits for traffic, so the failure mode gauge, readiness and the first burst
 * after an outage all see Redis again within a probe interval of the connection being back (D-R14). Each switch
 * emits `failover` or `recover`; each failed call emits `error`.
 */
export class Breaker {
  readonly #o: BreakerOptions;
  #state: 'redis' | 'fallback' = 'redis';
  #failures = 0;
  #since = 0;
  #fallbackAtSwitch = 0;
  #cancelProbe: (() => void) | undefined;
  #closed = false;
  /** Bumped at each failover, so that a late answer to a call sent before it cannot count as a recovery. */
  #epoch = 0;
  readonly #offConnect: (() => void) | undefined;

  constructor(options: BreakerOptions) {
    this.#o = options;
    this.#offConnect = options.onConnect?.(() => this.#connected());
    // A client that tells of its connections is warmed now too: it may be open already.
    if (this.#offConnect !== undefined) this.#connected();
  }

  /** `redis` while Redis answers, `fallback` while the failure mode decides. */
  get state(): 'redis' | 'fallback' {
    return this.#state;
  }

  /** The current epoch: pass it to {@link Breaker.succeeded} for an answer to a call sent now. */
  get epoch(): number {
    return this.#epoch;
  }

  /** True when calls go to Redis; false while the failure mode decides (the probe timer brings Redis back). */
  usable(): boolean {
    return this.#state === 'redis';
  }

  /** Stops probing for good (the store closed). */
  close(): void {
    this.#closed = true;
    this.#offConnect?.();
    this.#cancelProbe?.();
    this.#cancelProbe = undefined;
  }

  /** Redis answered a call sent in `epoch`: the failure streak ends, and a switched store switches back. */
  succeeded(epoch: number): void {
    if (epoch !== this.#epoch) return;
    this.#failures = 0;
    if (this.#state === 'redis') return;
    this.#state = 'redis';
    this.#cancelProbe?.();
    this.#cancelProbe = undefined;
    const c = this.#o.counters;
    c.recoveries++;
    this.#o.events.emit('recover', {
      downtimeMs: Math.max(0, this.#now() - this.#since),
      fallbackDecisions: c.fallbackDecisions - this.#fallbackAtSwitch,
    });
  }

  /** A script call failed: counted, reported, and the switch to the failure mode once the streak is long enough. */
  failed(error: unknown): void {
    const c = this.#o.counters;
    c.errors++;
    this.#failures++;
    const events = this.#o.events;
    if (events.has('error')) events.emit('error', { cause: error, timeout: isTimeout(error) });
    if (this.#state === 'fallback' || this.#failures < this.#o.failureThreshold) return;
    this.#state = 'fallback';
    this.#epoch++;
    this.#since = this.#now();
    this.#fallbackAtSwitch = c.fallbackDecisions;
    c.failovers++;
    events.emit('failover', { failureMode: this.#o.failureMode, cause: error });
    this.#scheduleProbe();
  }

  #scheduleProbe(): void {
    if (this.#closed || this.#state === 'redis' || this.#cancelProbe !== undefined) return;
    this.#cancelProbe = this.#o.timer(this.#o.probeIntervalMs, () => {
      this.#cancelProbe = undefined;
      this.#probe();
    });
  }

  #probe(): void {
    if (this.#closed || this.#state === 'redis') return;
    this.#o.counters.probes++;
    const epoch = this.#epoch;
    withTimeout(
      Promise.resolve().then(() => this.#o.ping()),
      this.#o.timeoutMs,
      () => this.#o.counters.timeouts++,
    ).then(
      () => {
        this.succeeded(epoch);
        // Nothing to do once back on Redis; an answer from before a newer switch does not count: keep probing.
        this.#scheduleProbe();
      },
      () => this.#scheduleProbe(),
    );
  }

  /**
   * The client's connection opened (at start or again): one round trip now, whether or not requests arrive. Its
   * answer ends the failure streak and, when switched, the failure mode at once, so that no store (no thread of
   * a process) waits for traffic or for its next probe, and a store that saw a few failures short of switching
   * does not keep them. With the script loaded by it, the first burst after a restart pays no NOSCRIPT round
   * trip in every batch, which under load made calls time out and follow the failure mode (D-G78).
   */
  #connected(): void {
    if (this.#closed) return;
    const epoch = this.#epoch;
    Promise.resolve()
      .then(() => this.#o.ping())
      .then(() => {
        if (this.#closed) return;
        this.#o.reconnected?.();
        this.succeeded(epoch);
      }, noop);
  }

  #now(): number {
    return Math.floor(this.#o.clock.now());
  }
}

function noop(): void {}

/**
 * The breaker's probe timer on the store's clock: an unref'd real timer, or the injected clock's `sleep` (a
 * `ManualClock` in tests).
 *
 * @param clock - the store's injected clock, or `undefined` for real time.
 * @returns the {@link ProbeTimer} a {@link Breaker} is built with.
 */
export function probeTimer(clock: Clock | undefined): ProbeTimer {
  if (clock === undefined) {
    return (ms, run) => {
      const timer = setTimeout(run, ms);
      // A store waiting for Redis to come back must not keep the process alive.
      timer.unref?.();
      return () => clearTimeout(timer);
    };
  }
  return (ms, run) => {
    const stop = new AbortController();
    clock.sleep(ms, stop.signal).then(run, noop);
    return () => stop.abort();
  };
}
