import type { GatewayConfig } from '../config/gateway-config.js';
import { EndpointRoute } from './endpoint-route.js';

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
  readonly #routes: readonly EndpointRoute[];

  private constructor(maxBytes: number, everyRoute: boolean, routes: readonly EndpointRoute[]) {
    this.maxBytes = maxBytes;
    this.#everyRoute = everyRoute;
    this.#routes = routes;
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
    const routes: EndpointRoute[] = [];
    for (const rule of config.endpoints) {
      const r = rule.cost?.reserve;
      if (r === undefined || typeof r === 'number') continue;
      most = Math.max(most, r.maxBytes);
      routes.push(new EndpointRoute(rule));
    }
    if (most === 0) return undefined;
    return new ReserveBodyScope(most, everyRoute, Object.freeze(routes));
  }

  /**
   * Whether a request's body is read before admission.
   *
   * @param method - the request method as sent.
   * @param path - the canonical path (no query), as the limits match it.
   */
  wants(method: string, path: string): boolean {
    if (this.#everyRoute) return true;
    const routes = this.#routes;
    for (let i = 0; i < routes.length; i++) if (routes[i].matches(method, path)) return true;
    return false;
  }
}
