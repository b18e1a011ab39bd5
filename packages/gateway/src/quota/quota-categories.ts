import { compilePathPattern, type PathPattern } from 'sluice/http';
import type { QuotaConfig } from '../config/quota-config.js';

interface CompiledCategory {
  readonly name: string;
  readonly rules: ReadonlySet<string>;
  readonly patterns: readonly PathPattern[];
}

/**
 * The endpoint categories of the `quota:` section, compiled once per configuration: a request falls in the first
 * category that names one of its matched endpoint rules or whose pattern matches its path, else in the default
 * category. Category names come from configuration only, so usage stays keyed by a closed set.
 *
 * @example
 * ```ts
 * const c = new QuotaCategories(config.quota);
 * c.categoryOf('/api/risk/simulation/run', ['/api/risk/simulation/*']); // 'risk-simulation'
 * ```
 */
export class QuotaCategories {
  /** The category of requests no category matches. */
  readonly defaultCategory: string;
  readonly #categories: readonly CompiledCategory[];

  /** @param config - the resolved `quota:` section (patterns already validated). */
  constructor(config: QuotaConfig) {
    this.defaultCategory = config.defaultCategory;
    this.#categories = config.categories.map((c, i) => ({
      name: c.name,
      rules: new Set(c.rules),
      patterns: c.patterns.map((p, j) => compilePathPattern(p, `quota.categories[${i}].patterns[${j}]`)),
    }));
  }

  /**
   * The category of one request.
   *
   * @param path - the normalized path.
   * @param rules - names of the endpoint rules that matched the request (from `LimitPlan.checksFor`).
   */
  categoryOf(path: string, rules: readonly string[]): string {
    for (const c of this.#categories) {
      for (let i = 0; i < rules.length; i++) if (c.rules.has(rules[i])) return c.name;
      for (const p of c.patterns) if (p.match(path)) return c.name;
    }
    return this.defaultCategory;
  }
}
