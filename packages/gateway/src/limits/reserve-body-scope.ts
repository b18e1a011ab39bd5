import { compilePathPattern, type PathPattern } from 'sluice/http';
import type { GatewayConfig } from '../config/gateway-config.js';

/** An endpoint rule whose reservation reads a field of the request body: its path pattern and methods. */
interface BodyRule {
  readonly pattern: PathPattern;
  /** Upper-case methods, `HEAD` added beside `GET` as the rules match them; `undefined` for any method. */
  readonly methods: ReadonlySet<string> | undefined;
}

/**
 * Which requests have their body read before admission for a reservation that names one of its fields
 * (`cost.reserve.field`), and how many bytes at most. A tier's reservation applies to every route of the tier,
 * and the tier is known only once the caller is identified, so one such tier reads every request's body; otherwise
 * only a request that an endpoint rule with such a reservation matches (its path and methods, as the limits match
 * them) is read. Every other request goes upstream as it arrives, its body streamed, not held back for a
 * reservation it does not take.
 *
 * @example
 * ```ts
 * const scope = ReserveBodyScope.of(config); // undefined when nothing reserves from a body
 * if (scope?.wants('POST', '/v1/chat/completions')) await readReserveBody(req, scope.maxBytes, timeoutMs);
 * ```
 */
export class ReserveBodyScope {
  /** The most request body bytes read (the largest `cost.reserve.maxBytes` of the rules that read one). */
  readonly maxBytes: number;
  /** True when a tier reserves from the body: every request is read. */
  readonly #everyRoute: boolean;
  readonly #rules: readonly BodyRule[];

  private constructor(maxBytes: number, everyRoute: boolean, rules: readonly BodyRule[]) {
    this.maxBytes = maxBytes;
    this.#everyRoute = everyRoute;
    this.#rules = rules;
    Object.freeze(this);
  }

  /**
   * The scope of a configuration.
   *
   * @param config - the resolved configuration; its endpoint rules carry their class's cost already.
   * @returns `undefined` when no tier and no endpoint rule reserves from the request body.
   */
  static of(config: GatewayConfig): ReserveBodyScope | undefined {
    let most = 0;
    let everyRoute = false;
    for (const tier of Object.values(config.tiers)) {
      const r = tier.cost?.reserve;
      if (r === undefined || typeof r === 'number' || tier.unlimited) continue;
      everyRoute = true;
      most = Math.max(most, r.maxBytes);
    }
    const rules: BodyRule[] = [];
    for (const rule of config.endpoints) {
      const r = rule.cost?.reserve;
      if (r === undefined || typeof r === 'number') continue;
      most = Math.max(most, r.maxBytes);
      const methods =
        rule.methods === undefined || rule.methods.length === 0
          ? undefined
          : new Set(rule.methods.map((m) => m.toUpperCase()));
      if (methods?.has('GET')) methods.add('HEAD');
      rules.push({ pattern: compilePathPattern(rule.pattern, `endpoints[${rule.index}].pattern`), methods });
    }
    if (most === 0) return undefined;
    return new ReserveBodyScope(most, everyRoute, Object.freeze(rules));
  }

  /**
   * Whether a request's body is read before admission.
   *
   * @param method - the request method as sent.
   * @param path - the canonical path (no query), as the limits match it.
   */
  wants(method: string, path: string): boolean {
    if (this.#everyRoute) return true;
    const rules = this.#rules;
    let upper: string | undefined;
    for (let i = 0; i < rules.length; i++) {
      const r = rules[i];
      if (!r.pattern.match(path)) continue;
      if (r.methods === undefined) return true;
      upper ??= method.toUpperCase();
      if (r.methods.has(upper)) return true;
    }
    return false;
  }
}
