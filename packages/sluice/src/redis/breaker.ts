import type { Clock } from '../core/index.js';
import { isTimeout, withTimeout } from './call-timeout.js';
import type { FailureMode } from './failure-mode.js';
import type { RedisStoreCounters } from './redis-store-stats.js';
import type { StoreEvents } from './store-events.js';

/** Settings and collaborators of a {@link Breaker}. */
export interface BreakerOptions {
  readonly clock: Clock;
  readonly failureMode: FailureMode;
  /** Consecutive failed calls that switch to the failure mode. */
  readonly failureThreshold: number;
  /** Milliseconds (store clock) between probes while switched. */
  readonly probeIntervalMs: number;
  /** How long a probe may take. */
  readonly timeoutMs: number;
  /** The cheap round trip that tells whether Redis answers again. */
  readonly ping: () => Promise<unknown>;
  readonly counters: RedisStoreCounters;
  readonly events: StoreEvents;
}

/**
 * The breaker in front of Redis: Redis is asked while it answers; after `failureThreshold` failed calls in a row
 * the store stops asking and follows its failure mode, probing Redis every `probeIntervalMs` (on the next call,
 * so no timer runs), and the first answer switches back. Each switch emits `failover` or `recover`; each failed
 * call emits `error`.
 */
export class Breaker {
  readonly #o: BreakerOptions;
  #state: 'redis' | 'fallback' = 'redis';
  #failures = 0;
  #since = 0;
  #fallbackAtSwitch = 0;
  #nextProbe = 0;
  #probing = false;
  /** Bumped at each failover, so that a late answer to a call sent before it cannot count as a recovery. */
  #epoch = 0;

  constructor(options: BreakerOptions) {
    this.#o = options;
  }

  /** `redis` while Redis answers, `fallback` while the failure mode decides. */
  get state(): 'redis' | 'fallback' {
    return this.#state;
  }

  /** The current epoch: pass it to {@link Breaker.succeeded} for an answer to a call sent now. */
  get epoch(): number {
    return this.#epoch;
  }

  /** True when calls go to Redis; otherwise false, after sending a probe when one is due at `now`. */
  usable(now: number): boolean {
    if (this.#state === 'redis') return true;
    if (!this.#probing && now >= this.#nextProbe) this.#probe();
    return false;
  }

  /** Redis answered a call sent in `epoch`: the failure streak ends, and a switched store switches back. */
  succeeded(epoch: number): void {
    if (epoch !== this.#epoch) return;
    this.#failures = 0;
    if (this.#state === 'redis') return;
    this.#state = 'redis';
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
    this.#nextProbe = this.#since + this.#o.probeIntervalMs;
    c.failovers++;
    events.emit('failover', { failureMode: this.#o.failureMode, cause: error });
  }

  #probe(): void {
    this.#probing = true;
    this.#o.counters.probes++;
    const epoch = this.#epoch;
    withTimeout(
      Promise.resolve().then(() => this.#o.ping()),
      this.#o.timeoutMs,
      () => this.#o.counters.timeouts++,
    ).then(
      () => {
        this.#probing = false;
        this.succeeded(epoch);
      },
      () => {
        this.#probing = false;
        this.#nextProbe = this.#now() + this.#o.probeIntervalMs;
      },
    );
  }

  #now(): number {
    return Math.floor(this.#o.clock.now());
  }
}
