import type { Policy } from '../core/index.js';

/**
 * A stepped bucket in whole tokens, written apart from the engine's units so that the conformance suite checks
 * the stores against an independent statement of the rule: `refill.tokens` whole tokens every `refill.every`
 * seconds, counted from the take that left the bucket short of full; t is the step that fills it, Retry-After the
 * step that brings the cost, each rounded up to whole seconds (Retry-After at least 1). Clock readings must not
 * go backwards.
 */
export class SteppedModel {
  /** Whole tokens held (negative: queue debt). */
  tokens: number;
  /** Start of the current step, in milliseconds; meaningless while full. */
  anchor = 0;
  readonly #p: Policy;
  readonly #stepMs: number;
  readonly #perStep: number;

  /** @param policy - a stepped policy. */
  constructor(policy: Policy) {
    if (policy.refill === undefined) throw new Error(`policy ${policy.name} is not stepped`);
    this.#p = policy;
    this.#stepMs = policy.refill.every * 1000;
    this.#perStep = policy.refill.tokens;
    this.tokens = policy.burst;
  }

  /** Credits the whole steps that have passed by `now`. */
  at(now: number): void {
    if (this.tokens >= this.#p.burst || now <= this.anchor) return;
    const steps = Math.floor((now - this.anchor) / this.#stepMs);
    this.tokens = Math.min(this.#p.burst, this.tokens + steps * this.#perStep);
    this.anchor += steps * this.#stepMs;
  }

  /** True when the bucket holds `cost` (and `cost` fits the burst) at `now`. */
  holds(now: number, cost: number): boolean {
    this.at(now);
    return cost <= this.#p.burst && this.tokens >= cost;
  }

  /** Takes `cost` tokens at `now` (the caller checked {@link SteppedModel.holds}). */
  take(now: number, cost: number): void {
    this.at(now);
    if (this.tokens >= this.#p.burst) this.anchor = now;
    this.tokens -= cost;
  }

  /** Returns `cost` tokens at `now`, never above the burst. */
  refund(now: number, cost: number): void {
    this.at(now);
    this.tokens = Math.min(this.#p.burst, this.tokens + cost);
  }

  /** r at `now`. */
  remaining(): number {
    return Math.max(0, this.tokens);
  }

  /** t at `now`. */
  resetSeconds(now: number): number {
    if (this.tokens >= this.#p.burst) return 0;
    return this.#secondsUntil(now, this.#p.burst);
  }

  /** Retry-After at `now` for a denied `cost`. */
  retryAfterSeconds(now: number, cost: number): number {
    if (cost > this.#p.burst) return Math.max(1, this.resetSeconds(now));
    return Math.max(1, this.#secondsUntil(now, cost));
  }

  #secondsUntil(now: number, level: number): number {
    const steps = Math.ceil((level - this.tokens) / this.#perStep);
    return Math.ceil((steps * this.#stepMs - (now - this.anchor)) / 1000);
  }
}
