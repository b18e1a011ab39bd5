import type { ResponseHeadView, ResponseObserver } from 'sluice/http';
import type { GatewayConfig } from '../config/gateway-config.js';
import { EndpointRoute } from '../limits/endpoint-route.js';

/**
 * Removes upstream cost headers from an answer and holds nothing: what an exempt request gets on a route whose
 * rule reads its cost from a header. A limited request's own settlement removes the header; an exempt one has no
 * settlement, and the client must not see the header either way.
 */
class CostHeaderRemover implements ResponseObserver {
  readonly wantsBody = false;
  readonly #names: readonly string[];

  /** @param names - the headers, lower case. */
  constructor(names: readonly string[]) {
    this.#names = names;
  }

  head(head: ResponseHeadView): void {
    const names = this.#names;
    for (let i = 0; i < names.length; i++) if (head.get(names[i]) !== undefined) head.remove(names[i]);
  }

  end(): void {
    // Nothing is held.
  }
}

/** An endpoint rule that names a cost header it does not keep: its route and header. */
interface HeaderRule {
  readonly route: EndpointRoute;
  /** The tiers' headers and this rule's, for a request that matches this rule only. */
  readonly remover: CostHeaderRemover;
  readonly names: readonly string[];
}

/**
 * Which answers of exempt requests lose an upstream cost header (`cost.header` without `keepHeader: true`): those on
 * a route that a rule naming the header covers, a tier's rule covering every route, an endpoint rule its path and
 * methods (as the limits match them). Built once per configuration; the observers are made here, so an exempt
 * request on such a route allocates none unless two endpoint rules with different headers match it.
 *
 * @example
 * ```ts
 * const scope = CostHeaderScope.of(config); // undefined when no rule removes a header
 * const observer = scope?.observerFor('GET', '/reports/a'); // undefined when no rule of that route does
 * ```
 */
export class CostHeaderScope {
  /** The tiers' headers alone, for a route no endpoint rule with a header matches; `undefined` when none. */
  readonly #everyRoute: CostHeaderRemover | undefined;
  readonly #rules: readonly HeaderRule[];

  private constructor(tierNames: readonly string[], rules: readonly HeaderRule[]) {
    this.#everyRoute = tierNames.length === 0 ? undefined : new CostHeaderRemover(tierNames);
    this.#rules = rules;
    Object.freeze(this);
  }

  /**
   * The scope of a configuration.
   *
   * @param config - the resolved configuration; its endpoint rules carry their class's cost already.
   * @returns `undefined` when no tier and no endpoint rule removes a cost header.
   */
  static of(config: GatewayConfig): CostHeaderScope | undefined {
    const tierNames = new Set<string>();
    for (const tier of Object.values(config.tiers)) {
      const c = tier.cost;
      if (c?.header !== undefined && !c.keepHeader) tierNames.add(c.header.toLowerCase());
    }
    const rules: HeaderRule[] = [];
    for (const rule of config.endpoints) {
      const c = rule.cost;
      if (c?.header === undefined || c.keepHeader) continue;
      const names = Object.freeze([...new Set([...tierNames, c.header.toLowerCase()])]);
      rules.push({
        route: new EndpointRoute(rule),
        names,
        remover: new CostHeaderRemover(names),
      });
    }
    if (tierNames.size === 0 && rules.length === 0) return undefined;
    return new CostHeaderScope([...tierNames], Object.freeze(rules));
  }

  /**
   * The observer that removes the cost headers of an exempt request's route.
   *
   * @param method - the request method as sent.
   * @param path - the canonical path (no query), as the limits match it.
   * @returns `undefined` when no rule of the route names a header to remove.
   */
  observerFor(method: string, path: string): ResponseObserver | undefined {
    const rules = this.#rules;
    let found: HeaderRule | undefined;
    let names: Set<string> | undefined;
    for (let i = 0; i < rules.length; i++) {
      const r = rules[i];
      if (!r.route.matches(method, path)) continue;
      if (found === undefined) found = r;
      else {
        // Several rules with headers: their union, made for this request only (rare).
        names ??= new Set(found.names);
        for (const n of r.names) names.add(n);
      }
    }
    if (names !== undefined && names.size > (found as HeaderRule).names.length)
      return new CostHeaderRemover([...names]);
    return found?.remover ?? this.#everyRoute;
  }
}
