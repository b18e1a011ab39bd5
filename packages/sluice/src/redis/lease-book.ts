import type { Check, Decision } from '../core/index.js';
import type { ProbeTimer } from './breaker.js';

/** One key's concurrency slots this store holds: its check (the renewal's, built once) and how many. */
interface Held {
  readonly checks: readonly Check[];
  count: number;
  /** Slots of takes sent and not answered yet (part of `count`). */
  pending: number;
}

/**
 * One renewal to send: a key's check and the slots this store still runs on it, as the script reads a renewal's
 * cost: `n`, or `-1 - n` when no take of the key awaits its answer (then `n` may be restored where Redis lost it).
 */
export interface Renewal {
  readonly checks: readonly Check[];
  readonly cost: number;
}

/** Whether any check is of a concurrency policy: one pass, no allocation. */
export function holdsSlots(checks: readonly Check[]): boolean {
  for (let i = 0; i < checks.length; i++) if (checks[i].policy.concurrent > 0) return true;
  return false;
}

/**
 * The concurrency slots one Redis store holds, per Redis key, and the one timer that renews their leases (D-G108).
 * A take is counted when it is sent and uncounted when its answer took nothing, a release when it is sent: the
 * count is never below what Redis holds for this store, except for a release Redis never heard of (an outage), so
 * a renewal, which sets the store's count in Redis to the smaller of the two, corrects exactly that; where Redis
 * holds nothing of this store (its lease ended while it stalled, Redis lost the key) the renewal counts again
 * what the store still runs. A key is kept
 * while it holds slots, plus one renewal at zero (so a lost release is undone), then forgotten: no entry per
 * request, one per key held.
 */
export class LeaseBook {
  readonly #held = new Map<string, Held>();
  readonly #timer: ProbeTimer;
  readonly #everyMs: number;
  readonly #renew: () => Promise<void>;
  #stop: (() => void) | undefined;
  #closed = false;

  /**
   * @param timer - schedules the renewals (real time, or the injected clock's).
   * @param leaseMs - the lease time: renewals come every third of it, so two may fail before a lease ends.
   * @param renew - sends the renewals (the store's {@link RedisStore.renewLeases}).
   */
  constructor(timer: ProbeTimer, leaseMs: number, renew: () => Promise<void>) {
    this.#timer = timer;
    this.#everyMs = Math.max(1, Math.floor(leaseMs / 3));
    this.#renew = renew;
  }

  /** Keys holding slots (or waiting for their last renewal). */
  get size(): number {
    return this.#held.size;
  }

  /**
   * Counts the slots a decide of `cost` would take, and uncounts them if its decision took none: the decision
   * promise as it is when nothing of it holds slots.
   */
  track(
    checks: readonly Check[],
    keys: readonly string[],
    cost: number,
    d: Promise<Decision>,
  ): Promise<Decision> {
    this.#add(checks, keys, cost, cost);
    this.#schedule();
    return d.then(
      (x) => {
        this.#add(checks, keys, 0, -cost);
        if (!x.allowed || x.reason !== 'allowed') this.release(checks, keys, cost);
        return x;
      },
      (error: unknown) => {
        this.#add(checks, keys, 0, -cost);
        this.release(checks, keys, cost);
        throw error;
      },
    );
  }

  /** A release (or a take that took nothing): `cost` fewer slots on each concurrency check's key, never below 0. */
  release(checks: readonly Check[], keys: readonly string[], cost: number): void {
    for (let i = 0; i < checks.length; i++) {
      if (checks[i].policy.concurrent === 0) continue;
      const h = this.#held.get(keys[i]);
      if (h !== undefined) h.count = Math.max(0, h.count - cost);
    }
  }

  /** The renewals of every key held; a key at zero is renewed this once and forgotten. */
  renewals(): Renewal[] {
    const out: Renewal[] = [];
    for (const [key, h] of this.#held) {
      out.push({ checks: h.checks, cost: h.pending === 0 ? -1 - h.count : h.count });
      if (h.count === 0) this.#held.delete(key);
    }
    return out;
  }

  /** Stops the timer; a closed store renews nothing, so its slots end with their leases. */
  close(): void {
    this.#closed = true;
    this.#stop?.();
    this.#stop = undefined;
    this.#held.clear();
  }

  /** Adds `count` slots, `pending` of them awaiting an answer, to each concurrency check's key. */
  #add(checks: readonly Check[], keys: readonly string[], count: number, pending: number): void {
    for (let i = 0; i < checks.length; i++) {
      if (checks[i].policy.concurrent === 0) continue;
      let h = this.#held.get(keys[i]);
      if (h === undefined) {
        // An answer for a key forgotten since: nothing of it is held.
        if (count === 0) continue;
        h = { checks: [checks[i]], count: 0, pending: 0 };
        this.#held.set(keys[i], h);
      }
      h.count += count;
      h.pending = Math.max(0, h.pending + pending);
    }
  }

  /** Starts the one timer at the first take; it runs while keys are held and stops when none is left. */
  #schedule(): void {
    if (this.#stop !== undefined || this.#closed) return;
    this.#stop = this.#timer(this.#everyMs, () => {
      this.#renew().then(this.#next, this.#next);
    });
  }

  readonly #next = (): void => {
    this.#stop = undefined;
    if (this.#held.size > 0) this.#schedule();
  };
}
