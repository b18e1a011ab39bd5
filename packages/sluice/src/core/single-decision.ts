import { remainingTokens, retryAfterSeconds, secondsUntilFull } from './bucket-math.js';
import { type Decision, type DecisionReason, NO_OUTCOMES, type PolicyOutcome } from './decision.js';
import { definePolicy, type Policy } from './policy.js';

const PLACEHOLDER = definePolicy({ name: 'unset', quota: 1, window: 1 });

/**
 * The decision for a request with one policy, the common case. Header values (r, t) are derived on first read
 * from the bucket's units, so a caller that only asks `allowed` pays no division; they equal the values of
 * `evaluate` (the conformance suite compares both paths).
 *
 * A synchronous store can refill one instance in place (`decideOne(policy, key, cost, into)`), which makes a
 * decision for a known key allocation free. Such an instance is valid until the next call that reuses it: read
 * what you need (or copy it) before deciding again.
 */
export class SingleDecision implements Decision {
  // Fields are assigned in the constructor rather than by initializers: V8 then builds the object in one
  // inlined step, which a store that allocates a decision per call (no `into`) pays on every request.
  declare allowed: boolean;
  declare cost: number;
  declare delayMs: number;
  /** The policy decided. */
  declare policy: Policy;
  /** The bucket key. */
  declare key: string;
  /** True when the policy lacked the tokens (for a shadow policy: would have denied). */
  declare limited: boolean;
  /** @internal Units after the decision. */
  declare units: number;
  /** @internal Units before the decision (after refill). */
  declare before: number;
  /** @internal Stepped policies: milliseconds since the bucket's current refill step began. */
  declare phase: number;
  /** @internal The outcome list once built. */
  declare private cached: readonly PolicyOutcome[] | undefined;

  /**
   * An empty decision to pass as `into`, or (stores only) a filled one in a single step; the arguments mean
   * what they mean for {@link SingleDecision.set}.
   */
  constructor(
    policy?: Policy,
    key?: string,
    cost?: number,
    before?: number,
    after?: number,
    limited?: boolean,
    delayMs?: number,
    phase?: number,
  ) {
    // No default parameters: one test for the empty decision keeps the constructor's bytecode small enough for V8
    // to inline it into `decideOne` inlined into `limiter.check`, where the defaults (half of it) kept it out.
    if (policy === undefined) {
      policy = PLACEHOLDER;
      key = '';
      cost = 1;
      before = 0;
      after = 0;
      limited = false;
      delayMs = 0;
      phase = 0;
    }
    // Assigned here rather than through set(): measured, the call from the constructor kept V8 from inlining
    // the allocation into `limiter.check` (0.7x against 0.95x of a naive Map bucket).
    // Given a policy, a store gives every argument: the casts only tell the compiler so.
    this.allowed = !limited || policy.shadow;
    this.cost = cost as number;
    this.delayMs = delayMs as number;
    this.policy = policy;
    this.key = key as string;
    this.limited = limited as boolean;
    this.units = after as number;
    this.before = before as number;
    this.phase = phase as number;
    this.cached = undefined;
  }

  /**
   * Fills this decision; returns it. Stores call this; applications read. Only the facts are stored: every
   * derived value is computed when read, which keeps the allowed path to a few field writes.
   *
   * @param policy - the policy decided.
   * @param key - the bucket key.
   * @param cost - the cost asked for.
   * @param before - units after refill, before the decision.
   * @param after - units after the decision (equal to `before` when nothing was taken).
   * @param limited - whether the policy lacked the tokens.
   * @param delayMs - for a reservation, the wait; else 0.
   * @param phase - for a stepped policy, milliseconds since the current refill step began; else 0.
   */
  set(
    policy: Policy,
    key: string,
    cost: number,
    before: number,
    after: number,
    limited: boolean,
    delayMs: number,
    phase = 0,
  ): this {
    this.allowed = !limited || policy.shadow;
    if (this.policy !== policy) this.policy = policy;
    if (this.key !== key) this.key = key;
    this.cost = cost;
    this.limited = limited;
    this.units = after;
    this.before = before;
    this.delayMs = delayMs;
    this.phase = phase;
    if (this.cached !== undefined) this.cached = undefined;
    return this;
  }

  get reason(): DecisionReason {
    if (this.allowed) return 'allowed';
    return this.cost > this.policy.burst ? 'cost_exceeds_burst' : 'limited';
  }

  get retryAfterSeconds(): number {
    return this.allowed ? 0 : retryFor(this.policy, this.before, this.cost, this.phase);
  }

  /** r of the one policy. */
  get remaining(): number {
    return remainingTokens(this.policy, this.units);
  }

  /** t of the one policy. */
  get resetSeconds(): number {
    return secondsUntilFull(this.policy, this.units, this.phase);
  }

  get outcomes(): readonly PolicyOutcome[] {
    if (this.cached === undefined) {
      this.cached = [
        {
          policy: this.policy,
          key: this.key,
          limited: this.limited,
          remaining: this.remaining,
          resetSeconds: this.resetSeconds,
          retryAfterSeconds: this.limited ? retryFor(this.policy, this.before, this.cost, this.phase) : 0,
        },
      ];
    }
    return this.cached;
  }

  get violated(): readonly PolicyOutcome[] {
    return this.allowed ? NO_OUTCOMES : this.outcomes;
  }
}

function retryFor(p: Policy, before: number, cost: number, phase: number): number {
  if (cost > p.burst) {
    const t = secondsUntilFull(p, before, phase);
    return Math.max(t, 1);
  }
  return retryAfterSeconds(p, before, cost, phase);
}
