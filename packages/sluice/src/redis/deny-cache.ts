import {
  type Check,
  type Decision,
  type EvaluateMode,
  evaluate,
  msUntil,
  nextLast,
  refill,
} from '../core/index.js';

interface Snapshot {
  /** Units the bucket held when Redis last answered a denial for it. */
  units: number;
  /** Local time of that answer, in whole milliseconds. */
  at: number;
  /** The bucket's time in local milliseconds: `at`, or for a stepped policy the start of its step then. */
  last: number;
  /** Local time after which the snapshot is not trusted any more: the denial's retry time. */
  until: number;
}

/**
 * Remembers buckets that Redis just denied, so the same key is denied again locally until its retry time,
 * without a round trip.
 *
 * A snapshot is an upper bound of the bucket: other nodes only take tokens from it, so its true level is at most
 * the snapshot refilled to now. The cache therefore only ever denies, and only when that upper bound denies
 * (through the shared `evaluate`, so the headers are the ones Redis would have produced for this node alone);
 * whenever the bound would admit, the call goes to Redis. A refund or reset on another node becomes visible
 * here at the latest at the retry time. Entries are bounded (oldest dropped first) and need no timer.
 */
export class DenyCache {
  readonly #entries = new Map<string, Snapshot>();
  readonly #max: number;
  #units = new Float64Array(4);
  #epoch = 0;
  #phases = new Float64Array(4);

  /** @param maxEntries - the most buckets remembered. */
  constructor(maxEntries: number) {
    this.#max = maxEntries;
  }

  /**
   * Counts refunds and resets seen here. A call records it when it starts; the store neither remembers nor
   * refreshes from the answer of a call that started before a later refund or reset, since Redis may have run
   * that call before the refund or reset (see D-R07).
   */
  get epoch(): number {
    return this.#epoch;
  }

  /** Buckets remembered now. */
  get size(): number {
    return this.#entries.size;
  }

  /**
   * The denial for these checks when every bucket has a live snapshot and the snapshots deny; otherwise
   * undefined (ask Redis).
   */
  lookup(
    checks: readonly Check[],
    keys: readonly string[],
    cost: number,
    mode: EvaluateMode,
    now: number,
  ): Decision | undefined {
    const n = checks.length;
    if (n > this.#units.length) {
      this.#units = new Float64Array(n * 2);
      this.#phases = new Float64Array(n * 2);
    }
    const units = this.#units;
    const phases = this.#phases;
    for (let i = 0; i < n; i++) {
      const s = this.#entries.get(keys[i]);
      if (s === undefined) return undefined;
      if (now >= s.until) {
        this.#entries.delete(keys[i]);
        return undefined;
      }
      const p = checks[i].policy;
      units[i] = refill(p, s.units, now - s.last);
      phases[i] = now - nextLast(p, units[i], s.last, now);
    }
    const whole = n === units.length;
    const decision = evaluate(
      checks,
      whole ? units : units.subarray(0, n),
      cost,
      mode,
      whole ? phases : phases.subarray(0, n),
    );
    return decision.allowed ? undefined : decision;
  }

  /**
   * Takes in a decision Redis answered for a call that started at deny epoch `epoch`: a denial is remembered and
   * an admission refreshes what is remembered, unless a refund or reset came since the call started (its answer
   * may predate it, D-R07): then an admission only drops those buckets. A call holding concurrency slots is never
   * remembered: another store's release gives a slot back at no time a snapshot could tell (D-G108).
   *
   * @param units - each check's units before the decision, as the script returned them.
   * @param phases - stepped policies' phases, or `undefined` when none is stepped.
   * @param now - local time of the call.
   */
  answered(
    checks: readonly Check[],
    keys: readonly string[],
    epoch: number,
    units: Float64Array,
    phases: Float64Array | undefined,
    decision: Decision,
    now: number,
  ): void {
    let slots = false;
    for (let i = 0; i < checks.length; i++) if (checks[i].policy.concurrent > 0) slots = true;
    if (epoch === this.#epoch && !slots) {
      // evaluate() takes nothing from `units` on a denial, so they still hold the levels before the decision.
      if (decision.allowed) this.refresh(keys, units, phases, now);
      else this.remember(checks, keys, units, phases, decision, now);
    } else if (decision.allowed) {
      // It took tokens, so what is remembered of these buckets is too high now.
      this.drop(keys);
    }
  }

  /**
   * Records a denial Redis answered.
   *
   * @param before - each check's units at the decision (after refill), as the script returned them.
   * @param phases - stepped policies' phases as the script returned them, or `undefined` when none is stepped.
   */
  remember(
    checks: readonly Check[],
    keys: readonly string[],
    before: Float64Array,
    phases: Float64Array | undefined,
    decision: Decision,
    now: number,
  ): void {
    if (decision.reason !== 'limited') return;
    let wait = 0;
    for (const o of decision.violated) {
      const i = decision.outcomes.indexOf(o);
      const phase = phases === undefined ? 0 : phases[i];
      const w = msUntil(o.policy, before[i], decision.cost * o.policy.unitsPerToken, phase);
      if (w > wait) wait = w;
    }
    if (wait <= 0) return;
    for (let i = 0; i < checks.length; i++) {
      if (this.#entries.size >= this.#max && !this.#entries.has(keys[i])) {
        const oldest = this.#entries.keys().next().value as string;
        this.#entries.delete(oldest);
      }
      this.#entries.delete(keys[i]);
      const last = phases === undefined ? now : now - phases[i];
      this.#entries.set(keys[i], { units: before[i], at: now, last, until: now + wait });
    }
  }

  /**
   * Brings remembered buckets up to date with a later answer from Redis (this node took tokens from them since
   * they were denied), so a later local denial reports their levels as Redis last knew them.
   *
   * @param after - each check's units after that decision.
   * @param phases - stepped policies' phases at that decision, or `undefined` when none is stepped.
   */
  refresh(keys: readonly string[], after: Float64Array, phases: Float64Array | undefined, now: number): void {
    if (this.#entries.size === 0) return;
    for (let i = 0; i < keys.length; i++) {
      const s = this.#entries.get(keys[i]);
      if (s !== undefined) {
        s.units = after[i];
        s.at = now;
        s.last = phases === undefined ? now : now - phases[i];
      }
    }
  }

  /**
   * Forgets buckets without starting a new epoch: an answer that took tokens from them but cannot refresh them
   * (its call started before a later refund or reset) must not leave their older, higher levels behind.
   */
  drop(keys: readonly string[]): void {
    if (this.#entries.size === 0) return;
    for (const k of keys) this.#entries.delete(k);
  }

  /** Forgets buckets whose level changed upwards here (refund, reset). */
  forget(keys: readonly string[]): void {
    this.#epoch++;
    for (const k of keys) this.#entries.delete(k);
  }

  /** Forgets everything. */
  clear(): void {
    this.#epoch++;
    this.#entries.clear();
  }
}
