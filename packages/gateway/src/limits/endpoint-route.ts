import { compilePathPattern, type PathPattern } from 'sluice/http';
import type { EndpointRule } from '../config/gateway-config.js';

/**
 * The requests an endpoint rule applies to, matched as the limits match them: its path pattern (default pattern
 * options) against the canonical path, and its methods (`GET` names `HEAD` too; none means any). For the parts of
 * the gateway that must know a rule's route before admission decides (a body read for a reservation, a cost header
 * removed from an exempt answer).
 */
export class EndpointRoute {
  readonly #pattern: PathPattern;
  /** Upper-case methods; `undefined` for any method. */
  readonly #methods: ReadonlySet<string> | undefined;

  /** @param rule - a resolved endpoint rule. */
  constructor(rule: EndpointRule) {
    this.#pattern = compilePathPattern(rule.pattern, `endpoints[${rule.index}].pattern`);
    const methods =
      rule.methods === undefined || rule.methods.length === 0
        ? undefined
        : new Set(rule.methods.map((m) => m.toUpperCase()));
    if (methods?.has('GET')) methods.add('HEAD');
    this.#methods = methods;
    Object.freeze(this);
  }

  /**
   * Whether the rule applies to a request.
   *
   * @param method - the request method as sent (any case).
   * @param path - the canonical path, without the query.
   */
  matches(method: string, path: string): boolean {
    if (!this.#pattern.match(path)) return false;
    const methods = this.#methods;
    return methods === undefined || methods.has(method) || methods.has(method.toUpperCase());
  }
}
