import { msUntil, remainingTokens, retryAfterSeconds, secondsUntilFull } from './bucket-math.js';
import { type Decision, type DecisionReason, NO_OUTCOMES, type PolicyOutcome } from './decision.js';
import type { EvaluateMode } from './evaluate.js';
import type { Policy } from './policy.js';
import type { Check } from './store.js';

/**
 * The decision of a store over several policies that keeps the facts of each (its units before the decision and
 * the phase of a stepped policy) and builds the outcome objects only when `outcomes` or `violated` is read: most
 * callers read `allowed` alone, and the allocation and divisions of per-policy outcomes (a third of the garbage
 * of a decision over two policies) were paid on every request. Every value equals what `evaluate` gives for the
 * same buckets (the memory store's conformance and property tests compare them).
 *
 * The decision reads each check's policy and key from the list it was given when its outcomes are first read:
 * the list is taken as the store's callers pass it, never changed afterwards.
 */
export class ManyDecision implements Decision {
  /** The most checks one decision tells apart (by the bits of one number); a store gives a longer list to `evaluate`. */
  static readonly MAX_CHECKS = 30;
  declare allowed: boolean;
  declare cost: number;
  declare delayMs: number;
  /** The checks decided, in order (read, never changed; stores set it). */
  declare checks: readonly Check[];
  /** @internal Per check `i`: units before the decision (after refill) at `2i`, its phase at `2i + 1`. */
  declare readonly facts: number[];
  /** @internal Bit `i` set when check `i`'s policy lacked the tokens. */
  declare limitedBits: number;
  /** @internal Whether an enforcing policy's burst is below the cost. */
  declare exceeds: boolean;
  /** @internal Whether the tokens of the policies that had them were taken (an allowed decision, not a peek). */
  declare took: boolean;
  /** @internal The outcome list once built. */
  declare private cached: readonly PolicyOutcome[] | undefined;
  /** @internal The violated list once built. */
  declare private cachedViolated: readonly PolicyOutcome[] | undefined;

  /**
   * Decides over refilled buckets exactly as `evaluate` does (same arguments, same `units` written back) and
   * keeps the facts instead of the outcomes. Stores call this.
   *
   * @param checks - the request's policies and keys, at most {@link ManyDecision.MAX_CHECKS}.
   * @param units - in: refilled units per check; out: units after the decision.
   * @param cost - whole tokens asked for, an integer >= 1.
   * @param mode - `decide` takes tokens, `reserve` may also go into queue debt, `peek` takes nothing.
   * @param phases - per check, milliseconds since its current refill step began.
   */
  constructor(
    checks: readonly Check[],
    units: Float64Array,
    cost: number,
    mode: EvaluateMode,
    phases: Float64Array,
  ) {
    // Every field is given its value here (a shape V8 builds in one step), then `set` decides.
    this.allowed = true;
    this.cost = cost;
    this.delayMs = 0;
    this.checks = checks;
    this.facts = new Array<number>(2 * checks.length);
    this.limitedBits = 0;
    this.exceeds = false;
    this.took = false;
    this.cached = undefined;
    this.cachedViolated = undefined;
    this.set(checks, units, cost, mode, phases);
  }

  /**
   * Decides again into this instance (the arguments of the constructor) and returns it: a store that hands out
   * decisions given back to it (`MemoryStore.recycle`) writes over one of them, allocating nothing.
   */
  set(
    checks: readonly Check[],
    units: Float64Array,
    cost: number,
    mode: EvaluateMode,
    phases: Float64Array,
  ): this {
    const n = checks.length;
    let blocked = false;
    let exceeds = false;
    let delayMs = 0;
    let bits = 0;
    // Kept at its longest: a reused decision over fewer checks reads only the first 2n facts.
    const facts = this.facts;
    // One pass per check, as evaluate's two: whether it lacks the tokens (and the wait a reservation would need).
    for (let i = 0; i < n; i++) {
      const p = checks[i].policy;
      const before = units[i];
      facts[2 * i] = before;
      facts[2 * i + 1] = phases[i];
      if (cost > p.burst) {
        if (!p.shadow) exceeds = true;
        bits |= 1 << i;
        continue;
      }
      const after = before - cost * p.unitsPerToken;
      if (after >= 0) continue;
      if (mode === 'reserve' && p.queue !== undefined && -after <= p.debtUnits) {
        const wait = msUntil(p, after, 0, phases[i]);
        if (wait <= p.queue.maxWaitMs) {
          if (wait > delayMs) delayMs = wait;
          continue;
        }
      }
      bits |= 1 << i;
      if (!p.shadow) blocked = true;
    }
    const allowed = !blocked && !exceeds;
    const took = allowed && mode !== 'peek';
    if (took) {
      for (let i = 0; i < n; i++)
        if ((bits & (1 << i)) === 0) units[i] -= cost * checks[i].policy.unitsPerToken;
    }
    this.allowed = allowed;
    this.cost = cost;
    this.delayMs = allowed ? delayMs : 0;
    this.checks = checks;
    this.limitedBits = bits;
    this.exceeds = exceeds;
    this.took = took;
    if (this.cached !== undefined) this.cached = undefined;
    if (this.cachedViolated !== undefined) this.cachedViolated = undefined;
    return this;
  }

  /** The number of checks decided. */
  get size(): number {
    return this.checks.length;
  }

  /** The policy of check `i`, as `outcomes[i].policy` without building the outcomes. */
  policyAt(i: number): Policy {
    return this.checks[i].policy;
  }

  /** Whether check `i`'s policy lacked the tokens, as `outcomes[i].limited` without building the outcomes. */
  limitedAt(i: number): boolean {
    return (this.limitedBits & (1 << i)) !== 0;
  }

  get reason(): DecisionReason {
    return this.allowed ? 'allowed' : this.exceeds ? 'cost_exceeds_burst' : 'limited';
  }

  get retryAfterSeconds(): number {
    if (this.allowed) return 0;
    let retry = 0;
    for (let i = 0; i < this.checks.length; i++) {
      if (!this.limitedAt(i) || this.checks[i].policy.shadow) continue;
      const r = this.#retryAt(i);
      if (r > retry) retry = r;
    }
    return retry;
  }

  get outcomes(): readonly PolicyOutcome[] {
    if (this.cached === undefined) {
      const checks = this.checks;
      const n = checks.length;
      const list: PolicyOutcome[] = new Array(n);
      for (let i = 0; i < n; i++) {
        const p = checks[i].policy;
        const before = this.facts[2 * i];
        const phase = this.facts[2 * i + 1];
        const limited = this.limitedAt(i);
        const after = this.took && !limited ? before - this.cost * p.unitsPerToken : before;
        list[i] = {
          policy: p,
          key: checks[i].key,
          limited,
          remaining: remainingTokens(p, after),
          resetSeconds: secondsUntilFull(p, after, phase),
          retryAfterSeconds: limited ? this.#retryAt(i) : 0,
        };
      }
      this.cached = list;
    }
    return this.cached;
  }

  get violated(): readonly PolicyOutcome[] {
    if (this.cachedViolated === undefined) {
      let any = false;
      for (let i = 0; i < this.checks.length && !any; i++)
        any = this.limitedAt(i) && !this.checks[i].policy.shadow;
      let list = NO_OUTCOMES;
      if (any) {
        const limited: PolicyOutcome[] = [];
        for (const o of this.outcomes) if (o.limited && !o.policy.shadow) limited.push(o);
        list = limited;
      }
      this.cachedViolated = list;
    }
    return this.cachedViolated;
  }

  /** The decision as a plain object, as `evaluate` builds it (what `JSON.stringify` writes). */
  toJSON(): Decision {
    return {
      allowed: this.allowed,
      reason: this.reason,
      cost: this.cost,
      retryAfterSeconds: this.retryAfterSeconds,
      delayMs: this.delayMs,
      outcomes: this.outcomes,
      violated: this.violated,
    };
  }

  /** Retry-After of limited check `i`, as `evaluate` computes it. */
  #retryAt(i: number): number {
    const p = this.checks[i].policy;
    const before = this.facts[2 * i];
    const phase = this.facts[2 * i + 1];
    // A cost above burst can never be met; Retry-After then tells when the bucket is full, the best there is.
    return this.cost > p.burst
      ? Math.max(1, secondsUntilFull(p, before, phase))
      : retryAfterSeconds(p, before, this.cost, phase);
  }
}
