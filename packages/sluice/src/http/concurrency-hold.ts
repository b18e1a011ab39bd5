import {
  type Check,
  type Decision,
  type Limiter,
  type MaybePromise,
  type PolicyOutcome,
  plainDecision,
  type RateLimitStore,
} from '../core/index.js';
import { addInFlight } from './in-flight-tally.js';
import { isPromiseLike, whenReady } from './maybe-promise.js';
import { composeObservers, type ResponseObserver } from './response-observer.js';
import type { Verdict } from './types.js';

/**
 * The slots an admitted request holds in its concurrency policies, given back exactly once when its response
 * ends (completed, failed, timed out, or the client went away): the observer a concurrency rule puts on the
 * verdict. A release is the store's `refund` of the request's cost to those buckets, never above their slots.
 */
export class ConcurrencyHold implements ResponseObserver {
  #released = false;
  readonly #store: RateLimitStore;
  readonly #checks: readonly Check[];
  readonly #cost: number;
  readonly #onError: ((error: unknown) => void) | undefined;

  /**
   * @param store - the store that took the slots.
   * @param checks - the request's concurrency checks (and only those).
   * @param cost - the tokens the request took, so as many go back.
   * @param onError - told when a remote store fails to take a release (its lease then gives the slot back).
   */
  constructor(
    store: RateLimitStore,
    checks: readonly Check[],
    cost: number,
    onError?: (error: unknown) => void,
  ) {
    this.#store = store;
    this.#checks = checks;
    this.#cost = cost;
    this.#onError = onError;
    for (let i = 0; i < checks.length; i++) addInFlight(checks[i].policy, 1);
  }

  /** Whether the slots went back already. */
  get released(): boolean {
    return this.#released;
  }

  end(): void {
    if (this.#released) return;
    this.#released = true;
    for (let i = 0; i < this.#checks.length; i++) addInFlight(this.#checks[i].policy, -1);
    try {
      const r = this.#store.refund(this.#checks, this.#cost);
      if (isPromiseLike(r)) r.then(undefined, (e: unknown) => this.#onError?.(e));
    } catch (e) {
      this.#onError?.(e);
    }
  }
}

/** Whether any of a request's checks is of a concurrency policy: one pass, no allocation. */
export function hasSlots(checks: readonly Check[]): boolean {
  for (let i = 0; i < checks.length; i++) if (checks[i].policy.concurrent > 0) return true;
  return false;
}

/**
 * The verdict of a request whose checks hold slots of a concurrency policy: the same verdict with a
 * {@link ConcurrencyHold} as (part of) its observer when it was admitted and the store took the slots. A request
 * without a concurrency check is returned as it is, after one pass over its checks (no allocation).
 *
 * @param v - the verdict.
 * @param store - the store that decided it.
 * @param checks - the checks it decided (after overrides).
 * @param cost - the tokens it took.
 * @param onError - told when a release fails.
 */
export function holdSlots(
  v: Verdict,
  store: RateLimitStore,
  checks: readonly Check[],
  cost: number,
  onError?: (error: unknown) => void,
): Verdict {
  let n = 0;
  for (let i = 0; i < checks.length; i++) if (checks[i].policy.concurrent > 0) n++;
  // Nothing taken: a refusal (all or nothing), or an admission the store could not decide (failure mode open).
  if (n === 0 || v.action !== 'allow' || v.decision?.reason !== 'allowed') return v;
  const held = n === checks.length ? checks : checks.filter((c) => c.policy.concurrent > 0);
  return { ...v, observer: composeObservers(new ConcurrencyHold(store, held, cost, onError), v.observer) };
}

/**
 * {@link holdSlots} of a verdict now or later (a queue's wait, a remote store's answer).
 *
 * @param v - the verdict or its promise.
 * @param store - the store that decided it.
 * @param checks - the checks it decided.
 * @param cost - the tokens it took.
 * @param onError - told when a release fails.
 */
export function holding(
  v: MaybePromise<Verdict>,
  store: RateLimitStore,
  checks: readonly Check[],
  cost: number,
  onError?: (error: unknown) => void,
): MaybePromise<Verdict> {
  return whenReady(v, (x) => holdSlots(x, store, checks, cost, onError));
}

/**
 * Waits in a queue for the rate policies of a request, and only then takes its concurrency slots: a request that
 * waits holds no slot (its place in the queue is a debt of tokens, not a request in flight). When a slot is not
 * free once the wait is over, the request is refused for it and the tokens it waited for go back. Without a
 * concurrency check this is `limiter.wait` itself.
 *
 * @param limiter - the engine.
 * @param checks - the request's checks, in the plan's order.
 * @param cost - the request's cost.
 * @param signal - aborts the wait (the client went away).
 * @returns one decision over every check, in their order, as the plan's headers read it.
 */
export async function waitThenSlots(
  limiter: Limiter,
  checks: readonly Check[],
  cost: number,
  signal: AbortSignal | undefined,
): Promise<Decision> {
  const options = { cost, signal };
  if (!hasSlots(checks)) return limiter.wait(checks, options);
  const rate: Check[] = [];
  const slots: Check[] = [];
  for (const c of checks) (c.policy.concurrent > 0 ? slots : rate).push(c);
  const store = limiter.store;
  const waited = await limiter.wait(rate, options);
  if (!waited.allowed) return merged(checks, waited, await store.peek(slots, cost));
  const taken = await store.decide(slots, cost);
  if (taken.allowed) return merged(checks, waited, taken);
  // Given back only to the buckets that gave tokens, as an abandoned wait gives them back; the headers then say
  // what the buckets hold after it.
  await store.refund(
    rate.filter((_, i) => !waited.outcomes[i].limited),
    cost,
  );
  const now = await store.peek(rate, cost);
  return merged(checks, plainDecision(waited, { outcomes: now.outcomes }), taken);
}

/** The two decisions as one over `checks` in their order: allowed when both are, the longer Retry-After. */
function merged(checks: readonly Check[], rate: Decision, slots: Decision): Decision {
  const outcomes: PolicyOutcome[] = [];
  let r = 0;
  let s = 0;
  for (const c of checks) outcomes.push(c.policy.concurrent > 0 ? slots.outcomes[s++] : rate.outcomes[r++]);
  const allowed = rate.allowed && slots.allowed;
  return {
    allowed,
    reason: !rate.allowed ? rate.reason : slots.reason,
    cost: rate.cost,
    retryAfterSeconds: allowed ? 0 : Math.max(rate.retryAfterSeconds, slots.retryAfterSeconds),
    delayMs: rate.delayMs,
    outcomes,
    violated: allowed ? rate.violated : [...rate.violated, ...slots.violated],
  };
}
