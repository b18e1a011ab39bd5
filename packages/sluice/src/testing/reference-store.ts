import {
  type Check,
  type Decision,
  type EvaluateMode,
  evaluate,
  type ManualClock,
  nextLast,
  type Policy,
  type RateLimitStore,
  refill,
  settledUnits,
} from '../core/index.js';

/**
 * The slowest possible correct store: a Map of `{ units, last }` per policy and key, with no bounds. It exists
 * as the oracle of the conformance suite; every real store must decide exactly as it does.
 */
export class ReferenceStore implements RateLimitStore {
  readonly kind = 'reference';
  readonly #buckets = new Map<Policy, Map<string, { units: number; last: number }>>();
  readonly #clock: ManualClock;

  constructor(clock: ManualClock) {
    this.#clock = clock;
  }

  decide(checks: readonly Check[], cost: number): Decision {
    return this.#run(checks, cost, 'decide');
  }
  reserve(checks: readonly Check[], cost: number): Decision {
    return this.#run(checks, cost, 'reserve');
  }
  peek(checks: readonly Check[], cost: number): Decision {
    return this.#run(checks, cost, 'peek');
  }
  refund(checks: readonly Check[], cost: number): void {
    const now = Math.floor(this.#clock.now());
    for (const c of checks) {
      const b = this.#bucket(c, now);
      b.units = Math.min(c.policy.capacityUnits, b.units + cost * c.policy.unitsPerToken);
    }
  }
  /** Settles a cost after the response: the oracle of core/settle-math.ts for every store. */
  settle(checks: readonly Check[], deltaTokens: number): void {
    const now = Math.floor(this.#clock.now());
    for (const c of checks) {
      const b = this.#bucket(c, now);
      b.units = settledUnits(c.policy, b.units, deltaTokens);
    }
  }
  reset(checks: readonly Check[]): void {
    for (const c of checks) this.#buckets.get(c.policy)?.delete(c.key);
  }
  close(): void {}

  #bucket(c: Check, now: number): { units: number; last: number } {
    let m = this.#buckets.get(c.policy);
    if (!m) {
      m = new Map();
      this.#buckets.set(c.policy, m);
    }
    let b = m.get(c.key);
    if (!b) {
      b = { units: c.policy.capacityUnits, last: now };
      m.set(c.key, b);
    }
    const units = refill(c.policy, b.units, now - b.last);
    b.last = nextLast(c.policy, units, b.last, now);
    b.units = units;
    return b;
  }

  #run(checks: readonly Check[], cost: number, mode: EvaluateMode): Decision {
    const now = Math.floor(this.#clock.now());
    const buckets = checks.map((c) => this.#bucket(c, now));
    const units = Float64Array.from(buckets, (b) => b.units);
    const phases = Float64Array.from(buckets, (b) => now - b.last);
    const d = evaluate(checks, units, cost, mode, phases);
    if (mode !== 'peek') {
      for (let i = 0; i < buckets.length; i++) buckets[i].units = units[i];
    }
    return d;
  }
}
