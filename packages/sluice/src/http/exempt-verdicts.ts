import type { HeaderPair, Identity, Verdict } from './types.js';

const EMPTY: readonly HeaderPair[] = Object.freeze([]);
/** Reasons come from the limiter and from `exempt.when`; a bounded cache keeps a careless predicate harmless. */
const MAX_REASONS = 64;

/**
 * The exempt verdicts of a limiter: one frozen verdict per reason, shared by every request it lets through, so an
 * exemption allocates nothing; a verdict that names the caller is built per request.
 */
export class ExemptVerdicts {
  readonly #byReason = new Map<string, Verdict>();

  /**
   * The exempt verdict of a reason, frozen and shared, unless it must carry the identity or the key (an
   * `unlimited` override names the key it let through, for the logs).
   *
   * @param reason - why the request is exempt; the outcome is `exempt_<reason>`.
   * @param identity - the caller, when the verdict must name it.
   * @param key - the bucket key, when the verdict must name it.
   * @returns the verdict, frozen when it names neither.
   */
  of(reason: string, identity?: Identity, key?: string): Verdict {
    if (identity !== undefined || key !== undefined) {
      return {
        action: 'exempt',
        status: 200,
        outcome: `exempt_${reason}`,
        exemptReason: reason,
        headers: EMPTY,
        identity,
        key,
      };
    }
    let v = this.#byReason.get(reason);
    if (v === undefined) {
      v = Object.freeze({
        action: 'exempt',
        status: 200,
        outcome: `exempt_${reason}`,
        exemptReason: reason,
        headers: EMPTY,
      } as const);
      if (this.#byReason.size < MAX_REASONS) this.#byReason.set(reason, v);
    }
    return v;
  }
}
