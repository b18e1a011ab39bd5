import {
  type Check,
  type Clock,
  type Decision,
  definePolicy,
  type EvaluateMode,
  NO_OUTCOMES,
  type Policy,
  type PolicyOutcome,
} from '../core/index.js';
import { MemoryStore } from '../memory/index.js';
import type { FailureMode } from './failure-mode.js';

/** Buckets the `local` failure mode holds at most. */
export const LOCAL_MAX_TRACKED_KEYS = 100_000;

/**
 * What the store answers while Redis does not (see {@link FailureMode}): `open` admits, `closed` denies with
 * `store_unavailable`, `local` decides in process memory with every limit divided by `nodeCount`. Every answer
 * is a plain decision of exactly the fields of `Decision`, like the ones Redis answers produce.
 */
export class Fallback {
  readonly #mode: FailureMode;
  readonly #nodeCount: number;
  readonly #retryAfterSeconds: number;
  readonly #local: MemoryStore | undefined;
  readonly #localPolicies = new WeakMap<Policy, Policy>();
  #closed = false;

  /**
   * @param mode - the failure mode.
   * @param nodeCount - nodes sharing the limits (`local` divides by it).
   * @param probeIntervalMs - the breaker's probe interval: `closed` tells clients to retry after it.
   * @param clock - the store's clock, for the local buckets.
   */
  constructor(mode: FailureMode, nodeCount: number, probeIntervalMs: number, clock: Clock) {
    this.#mode = mode;
    this.#nodeCount = nodeCount;
    this.#retryAfterSeconds = Math.max(1, Math.ceil(probeIntervalMs / 1000));
    if (mode === 'local') {
      this.#local = new MemoryStore({ clock, maxTrackedKeys: LOCAL_MAX_TRACKED_KEYS });
    }
  }

  /** Buckets the local failure mode holds now (0 for `open` and `closed`). */
  get size(): number {
    return this.#local?.size ?? 0;
  }

  /** Buckets the local failure mode evicted to make room. */
  get evictions(): number {
    return this.#local?.stats().evictions ?? 0;
  }

  /** The failure mode's decision for a call Redis did not answer. */
  decide(checks: readonly Check[], cost: number, mode: EvaluateMode): Decision {
    const local = this.#local;
    // After close, a call still in flight gets the `closed` answer: the local buckets are gone.
    if (local !== undefined && !this.#closed) {
      const localChecks = this.#localChecks(checks);
      const d =
        mode === 'decide'
          ? local.decide(localChecks, cost)
          : mode === 'reserve'
            ? local.reserve(localChecks, cost)
            : local.peek(localChecks, cost);
      return ownPolicies(d, checks);
    }
    const open = this.#mode === 'open';
    const outcomes = checks.map(
      (c): PolicyOutcome => ({
        policy: c.policy,
        key: c.key,
        limited: false,
        remaining: open ? c.policy.burst : 0,
        resetSeconds: 0,
        retryAfterSeconds: 0,
      }),
    );
    return {
      allowed: open,
      reason: open ? 'store_unavailable_open' : 'store_unavailable',
      cost,
      retryAfterSeconds: open ? 0 : this.#retryAfterSeconds,
      delayMs: 0,
      outcomes,
      violated: NO_OUTCOMES,
    };
  }

  /** Returns tokens to the local buckets; false when there are none (`open`, `closed`) and the refund is lost. */
  refund(checks: readonly Check[], cost: number): boolean {
    if (this.#local === undefined || this.#closed) return false;
    this.#local.refund(this.#localChecks(checks), cost);
    return true;
  }

  /** Settles a cost on the local buckets (see `RateLimitStore.settle`); false when there are none and it is lost. */
  settle(checks: readonly Check[], deltaTokens: number): boolean {
    if (this.#local === undefined || this.#closed) return false;
    this.#local.settle(this.#localChecks(checks), deltaTokens);
    return true;
  }

  /** Forgets the local buckets of these checks. */
  reset(checks: readonly Check[]): void {
    if (!this.#closed) this.#local?.reset(this.#localChecks(checks));
  }

  /** Drops the local buckets; later answers are those of `closed`. */
  close(): void {
    this.#closed = true;
    this.#local?.close();
  }

  #localChecks(checks: readonly Check[]): readonly Check[] {
    if (this.#nodeCount === 1) return checks;
    return checks.map((c) => ({ policy: this.#localPolicy(c.policy), key: c.key }));
  }

  /** The policy with quota (tokens per step), burst and queue limit divided by the node count (at least 1 each). */
  #localPolicy(src: Policy): Policy {
    let p = this.#localPolicies.get(src);
    if (p === undefined) {
      const n = this.#nodeCount;
      const share = (v: number) => Math.max(1, Math.floor(v / n));
      // Slots in flight are shared like a burst; they never refill, so the local share stays a concurrency policy.
      p =
        src.concurrent > 0
          ? definePolicy({
              name: src.name,
              concurrent: share(src.concurrent),
              retryAfter: src.retryAfterHint,
              shadow: src.shadow,
            })
          : definePolicy({
              name: src.name,
              quota: share(src.quota),
              window: src.window,
              burst: share(src.burst),
              shadow: src.shadow,
              queue: src.queue && { limit: share(src.queue.limit), maxWaitMs: src.queue.maxWaitMs },
              refill: src.refill && { tokens: share(src.refill.tokens), every: src.refill.every },
            });
      this.#localPolicies.set(src, p);
    }
    return p;
  }
}

/**
 * A plain decision with the caller's own policies (names, identity) and the local buckets' levels. Every field is
 * read through the `Decision` interface, never copied with a spread: a one-policy decision of the memory store is
 * a `SingleDecision`, whose `reason`, `retryAfterSeconds`, `outcomes` and `violated` are getters on its prototype
 * (a spread would lose them and copy its internal fields instead).
 */
function ownPolicies(d: Decision, checks: readonly Check[]): Decision {
  const from = d.outcomes;
  const n = from.length;
  const outcomes: PolicyOutcome[] = new Array(n);
  let violated = 0;
  for (let i = 0; i < n; i++) {
    const o = from[i];
    const policy = checks[i].policy;
    outcomes[i] = {
      policy,
      key: checks[i].key,
      limited: o.limited,
      remaining: o.remaining,
      resetSeconds: o.resetSeconds,
      retryAfterSeconds: o.retryAfterSeconds,
    };
    if (o.limited && !policy.shadow) violated++;
  }
  return {
    allowed: d.allowed,
    reason: d.reason,
    cost: d.cost,
    retryAfterSeconds: d.retryAfterSeconds,
    delayMs: d.delayMs,
    outcomes,
    violated: violated === 0 ? NO_OUTCOMES : outcomes.filter((o) => o.limited && !o.policy.shadow),
  };
}
