import { integerOption, invalidOption } from '../core/index.js';

/** The label value that stands for every value outside a guard's closed set. */
export const OTHER_LABEL = 'other';

/**
 * Keeps one label's values in a closed set so the number of series stays bounded whatever the traffic.
 *
 * With an allow-list, values outside it become {@link OTHER_LABEL}. Without one, the first `max` distinct values
 * are admitted as they come (policy, tier and rule names are few and come from configuration) and any later new
 * value becomes `other`: a misconfiguration that passes request data as a label cannot grow the registry.
 *
 * @example
 * ```ts
 * const tiers = new LabelGuard('tier', ['free', 'standard'], 50);
 * tiers.value('free'); // 'free'
 * tiers.value('gold'); // 'other'
 * ```
 */
export class LabelGuard {
  /** The label's name, for messages. */
  readonly name: string;
  readonly #seen = new Set<string>();
  readonly #closed: boolean;
  readonly #max: number;
  #overflowed = false;

  /**
   * @param name - the label's name.
   * @param allowed - the closed set of values; when omitted, the first `max` values seen form the set.
   * @param max - the most distinct values admitted without an allow-list, integer >= 1.
   * @throws SluiceError `ERR_INVALID_OPTION` for a non-string allowed value or an invalid `max`.
   */
  constructor(name: string, allowed: Iterable<string> | undefined, max: number) {
    this.name = name;
    this.#max = integerOption(`${name} label limit`, max, 1, 100_000);
    this.#closed = allowed !== undefined;
    if (allowed !== undefined) {
      for (const v of allowed) {
        if (typeof v !== 'string') throw invalidOption(`${name} label values`, 'strings', v);
        this.#seen.add(v);
      }
    }
  }

  /** True once a value had to be folded into `other`. */
  get overflowed(): boolean {
    return this.#overflowed;
  }

  /** Values admitted so far (the allow-list, or the values seen). */
  get size(): number {
    return this.#seen.size;
  }

  /** The label value to use for `value`: itself when in the set (or admitted now), else `other`. */
  value(value: string): string {
    if (this.#seen.has(value)) return value;
    if (!this.#closed && this.#seen.size < this.#max) {
      this.#seen.add(value);
      return value;
    }
    this.#overflowed = true;
    return OTHER_LABEL;
  }
}
