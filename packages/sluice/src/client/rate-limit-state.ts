import type { Clock } from '../core/clock.js';
import {
  type BucketFacts,
  type CapacityBounds,
  mergeCapacity,
  nextPassDelayMs,
  observeCapacity,
} from './bucket-estimate.js';
import type { RateLimitObservation } from './read-rate-limit-headers.js';

/**
 * The latest known state of one policy at one origin: the last observation, placed on the client's clock, with
 * what the responses so far imply about the bucket. `remaining` is as observed at `observedAt`; `resetSeconds` is
 * as the server said it, when it did. Read the bucket at an instant with `bucketAt`.
 */
export interface RateLimitEntry extends RateLimitObservation, BucketFacts {
  /** The origin the responses came from, for example `https://api.example.com`. */
  readonly origin: string;
  /** When `remaining` was observed, in milliseconds of the client's clock. */
  readonly observedAt: number;
  /**
   * `observedAt + t`: when the server said the bucket is full again (draft-11 `t` counts until full, not until a
   * window resets); `undefined` when it gave no `t`.
   */
  readonly fullAt: number | undefined;
  /**
   * When the next request was expected to pass, at the latest: `observedAt` with `r >= 1`, else after one token's
   * refill time, `t` or a 429's Retry-After, whichever is shortest.
   */
  readonly nextAt: number | undefined;
  /**
   * What the bucket holds when full, at least: the largest lower bound the responses so far imply (the burst, which
   * the fields do not carry and which is often far below `q`). Exact once a response follows a full bucket.
   */
  readonly capacity: number | undefined;
  /** What the bucket holds when full, at most; `undefined` when nothing bounds it. */
  readonly capacityMax: number | undefined;
}

/** What a subscriber receives after every change. */
export interface RateLimitSnapshot {
  /** Every entry of every origin, oldest origin first. */
  readonly entries: readonly RateLimitEntry[];
  /** The origin whose state just changed. */
  readonly origin: string;
  /** The client's clock reading at the change, for countdowns. */
  readonly now: number;
}

/** A subscriber; an exception it throws is reported (not swallowed) and never fails the request. */
export type RateLimitListener = (snapshot: RateLimitSnapshot) => void;

interface OriginState {
  readonly policies: Map<string, RateLimitEntry>;
  retryAt: number | undefined;
}

/** Origins remembered at most; a client talks to a handful, so the oldest is dropped past this. */
const MAX_ORIGINS = 256;
/** Policies remembered per origin at most, so a hostile server cannot grow the client's memory. */
const MAX_POLICIES = 64;

/**
 * The latest rate-limit state per origin and policy, fed by responses, bounded in size, observable.
 *
 * One instance belongs to each client; read it through the client's `entries()` and `subscribe()`.
 */
export class RateLimitState {
  readonly #clock: Clock;
  readonly #origins = new Map<string, OriginState>();
  readonly #listeners = new Set<RateLimitListener>();

  /** @param clock - the clock times are recorded on (the client's). */
  constructor(clock: Clock) {
    this.#clock = clock;
  }

  /**
   * Records what one response said.
   *
   * A new observation replaces the facts it states and keeps the ones it does not: a response that names a
   * policy only in `RateLimit-Policy` did not spend from it, so the last known `remaining` still stands.
   *
   * @param origin - the response's origin.
   * @param observations - from {@link readRateLimitHeaders}.
   * @param retryAfterSeconds - the response's Retry-After when it refused the request; no request to the origin
   *   is expected to pass before it.
   * @param status - the response's status; only a 429's Retry-After also bounds an exhausted policy's wait (a 503's
   *   may come from an upstream and say nothing about the bucket).
   */
  record(
    origin: string,
    observations: readonly RateLimitObservation[],
    retryAfterSeconds?: number,
    status?: number,
  ): void {
    if (observations.length === 0 && retryAfterSeconds === undefined) return;
    const now = this.#clock.now();
    let state = this.#origins.get(origin);
    if (state === undefined) {
      if (this.#origins.size >= MAX_ORIGINS)
        this.#origins.delete(this.#origins.keys().next().value as string);
      state = { policies: new Map(), retryAt: undefined };
    } else {
      // Re-inserting keeps the map in least-recently-updated order for the eviction above.
      this.#origins.delete(origin);
    }
    this.#origins.set(origin, state);
    if (retryAfterSeconds !== undefined) state.retryAt = now + retryAfterSeconds * 1000;
    for (const o of observations) {
      const old = state.policies.get(o.policy);
      if (old === undefined && state.policies.size >= MAX_POLICIES) continue;
      const fresh = o.remaining !== undefined;
      const resetSeconds = fresh ? o.resetSeconds : old?.resetSeconds;
      const observedAt = fresh || old === undefined ? now : old.observedAt;
      const remaining = fresh ? o.remaining : old?.remaining;
      const quota = o.quota ?? old?.quota;
      const windowSeconds = o.windowSeconds ?? old?.windowSeconds;
      const facts = { remaining, resetSeconds, quota, windowSeconds };
      const reshaped = old !== undefined && (quota !== old.quota || windowSeconds !== old.windowSeconds);
      let bounds: CapacityBounds | undefined =
        old?.capacity === undefined || reshaped
          ? undefined
          : { min: old.capacity, max: old.capacityMax ?? Number.POSITIVE_INFINITY };
      const seen = observeCapacity(facts);
      // Another quota or window is another policy: what the old one implied no longer holds.
      if (seen !== undefined && (fresh || reshaped)) bounds = mergeCapacity(bounds, seen);
      let nextAt = old?.nextAt;
      if (fresh || reshaped) {
        const delay = nextPassDelayMs(facts, status === 429 ? retryAfterSeconds : undefined);
        nextAt = delay === undefined ? undefined : observedAt + delay;
      }
      state.policies.set(
        o.policy,
        Object.freeze({
          origin,
          policy: o.policy,
          remaining,
          quota,
          windowSeconds,
          quotaUnit: o.quotaUnit,
          resetSeconds,
          observedAt,
          fullAt: resetSeconds === undefined ? undefined : observedAt + resetSeconds * 1000,
          nextAt,
          capacity: bounds?.min,
          capacityMax:
            bounds === undefined || bounds.max === Number.POSITIVE_INFINITY ? undefined : bounds.max,
          form: o.form,
        }),
      );
    }
    this.#notify(origin, now);
  }

  /** Every entry, or those of one origin. */
  entries(origin?: string): RateLimitEntry[] {
    if (origin !== undefined) return [...(this.#origins.get(origin)?.policies.values() ?? [])];
    const out: RateLimitEntry[] = [];
    for (const s of this.#origins.values()) out.push(...s.policies.values());
    return out;
  }

  /** The entry of one policy at one origin. */
  get(origin: string, policy: string): RateLimitEntry | undefined {
    return this.#origins.get(origin)?.policies.get(policy);
  }

  /** When the origin's last Retry-After ends, in milliseconds of the client's clock. */
  retryAt(origin: string): number | undefined {
    return this.#origins.get(origin)?.retryAt;
  }

  /**
   * The earliest time, on the client's clock, at which the known state expects a request to the origin to pass:
   * after the last Retry-After, and after every exhausted policy's `nextAt` (one token's refill time `w / q`, `t`
   * or a 429's Retry-After, whichever is shortest: a token bucket, Sluice's own, reports in `t` the time until
   * full, yet admits again after one token). For a fixed-window server the shorter estimate costs at most one early
   * request, answered by a 429 whose Retry-After then rules.
   *
   * @returns a clock reading; at or before now means there is no reason to wait.
   */
  admitAt(origin: string): number {
    const state = this.#origins.get(origin);
    if (state === undefined) return Number.NEGATIVE_INFINITY;
    let at = state.retryAt ?? Number.NEGATIVE_INFINITY;
    for (const e of state.policies.values()) {
      if (e.remaining === 0 && e.nextAt !== undefined) at = Math.max(at, e.nextAt);
    }
    return at;
  }

  /**
   * Calls `listener` after every change, until the returned function is called.
   *
   * @returns the unsubscribe function.
   */
  subscribe(listener: RateLimitListener): () => void {
    this.#listeners.add(listener);
    return () => {
      this.#listeners.delete(listener);
    };
  }

  /** Forgets one origin, or everything. Subscribers are told about a forgotten origin. */
  clear(origin?: string): void {
    const origins = origin === undefined ? [...this.#origins.keys()] : [origin];
    for (const o of origins) {
      if (this.#origins.delete(o)) this.#notify(o, this.#clock.now());
    }
  }

  #notify(origin: string, now: number): void {
    if (this.#listeners.size === 0) return;
    const snapshot: RateLimitSnapshot = Object.freeze({
      entries: Object.freeze(this.entries()),
      origin,
      now,
    });
    for (const listener of [...this.#listeners]) {
      try {
        listener(snapshot);
      } catch (error) {
        reportListenerError(error);
      }
    }
  }
}

function reportListenerError(error: unknown): void {
  // A broken display must not fail the request that fed it; it still surfaces where the platform reports errors.
  const report = (globalThis as { reportError?: (e: unknown) => void }).reportError;
  if (typeof report === 'function') report(error);
  else console.error('sluice/client: a rate-limit subscriber threw', error);
}
