import type { Check, Decision, Policy } from 'sluice';
import {
  formatDecisionHeaders,
  type HeaderMode,
  HeaderName,
  type HeaderPair,
  HeaderPlan,
  legacyPolicyName,
  mostRestrictive,
  resetEpochSeconds,
} from 'sluice/http';
import type { DecisionLabels } from 'sluice/metrics';

/**
 * The constant parts of the legacy `X-RateLimit-*` headers per policy (`Limit` and `Policy` values), computed once
 * per plan, so a request only formats its remaining tokens and reset time.
 */
export class LegacyParts {
  readonly #parts = new Map<Policy, readonly [limit: string, name: string]>();

  /** @param policies - every policy of the plan. */
  constructor(policies: readonly Policy[]) {
    for (const p of policies) this.#parts.set(p, [String(p.quota), legacyPolicyName(p.name)]);
  }

  /** The legacy headers of a decision, equal to `legacyRateLimitHeaders` of sluice/http. */
  headers(decision: Decision, nowMs: number, out: HeaderPair[]): void {
    const o = mostRestrictive(decision);
    if (o === undefined) return;
    const parts = this.#parts.get(o.policy) ?? [String(o.policy.quota), legacyPolicyName(o.policy.name)];
    out.push(
      [HeaderName.LegacyLimit, parts[0]],
      [HeaderName.LegacyRemaining, String(o.remaining)],
      [HeaderName.LegacyReset, String(resetEpochSeconds(nowMs, o.resetSeconds))],
      [HeaderName.LegacyPolicy, parts[1]],
    );
  }
}

/**
 * The policies one kind of request is decided against (a tier plus the endpoint rules that match), with what is
 * constant for them computed once: the `RateLimit-Policy` pair and the `RateLimit` item prefixes, the legacy
 * header parts, and the metric labels. `LimitPlan.routeFor` caches one per tier and rule set.
 */
export class Route {
  /** The policies, in check order: the tier's minute and hour buckets, then the matching rules. */
  readonly policies: readonly Policy[];
  /** Names of the endpoint rules that matched, in configuration order. */
  readonly rules: readonly string[];
  readonly #tier: string;
  /** `undefined` when a name cannot be serialized (non-ASCII): then every decision takes the general formatter. */
  readonly #header: HeaderPlan | undefined;
  readonly #legacy: LegacyParts;
  #labels: DecisionLabels | undefined;

  /**
   * @param tier - the tier's name (metric label).
   * @param policies - the policies in check order.
   * @param rules - the matching rules' names.
   * @param legacy - the plan's legacy header parts.
   */
  constructor(tier: string, policies: readonly Policy[], rules: readonly string[], legacy: LegacyParts) {
    this.#tier = tier;
    this.policies = policies;
    this.rules = rules;
    this.#header = headerPlan(policies);
    this.#legacy = legacy;
  }

  /** The checks of this route for one bucket key (prefix included). */
  checks(bucketKey: string): Check[] {
    const p = this.policies;
    const out: Check[] = new Array(p.length);
    for (let i = 0; i < p.length; i++) out[i] = { policy: p[i], key: bucketKey };
    return out;
  }

  /** The metric labels of a decision over this route: tier, first matching rule, store kind. */
  labels(store: string): DecisionLabels {
    const l = this.#labels;
    if (l !== undefined && l.store === store) return l;
    const labels = Object.freeze({ tier: this.#tier, rule: this.rules[0] ?? '', store });
    this.#labels = labels;
    return labels;
  }

  /**
   * The rate-limit headers of a decision over this route, exactly as `formatDecisionHeaders` of sluice/http gives
   * them (a property test holds the two equal), built from the precomputed parts.
   *
   * @param decision - a decision over {@link Route.checks}.
   * @param mode - `headers.mode`.
   * @param nowMs - wall-clock milliseconds for `X-RateLimit-Reset`.
   */
  headers(decision: Decision, mode: HeaderMode, nowMs: number): HeaderPair[] {
    const outcomes = decision.outcomes;
    const p = this.policies;
    const header = this.#header;
    if (header === undefined || outcomes.length !== p.length)
      return formatDecisionHeaders(decision, { mode, nowMs });
    for (let i = 0; i < p.length; i++) {
      if (outcomes[i].policy !== p[i]) return formatDecisionHeaders(decision, { mode, nowMs });
    }
    const out: HeaderPair[] = [];
    const known = decision.reason !== 'store_unavailable_open' && decision.reason !== 'store_unavailable';
    if (outcomes.length > 0 && (mode === 'draft-11' || mode === 'both') && header.policyValue !== '') {
      out.push(header.policyPair);
      if (known) out.push([HeaderName.RateLimit, header.state(outcomes)]);
    }
    if (known && (mode === 'legacy' || mode === 'both')) this.#legacy.headers(decision, nowMs, out);
    if (!decision.allowed) out.push([HeaderName.RetryAfter, String(Math.max(1, decision.retryAfterSeconds))]);
    return out;
  }
}

function headerPlan(policies: readonly Policy[]): HeaderPlan | undefined {
  try {
    return new HeaderPlan(policies);
  } catch {
    // The general formatter reports the same problem per request, only where the mode asks for those headers.
    return undefined;
  }
}
