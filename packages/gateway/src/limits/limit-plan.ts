import { type Check, type Decision, definePolicy, Limiter, type Policy, type RateLimitStore } from 'sluice';
import {
  compilePathPattern,
  formatDecisionHeaders,
  type HeaderMode,
  type HeaderPair,
  type PathPattern,
} from 'sluice/http';
import type { GatewayConfig, TierConfig } from '../config/gateway-config.js';
import { LegacyParts, Route } from './route.js';

interface CompiledRule {
  readonly name: string;
  readonly pattern: PathPattern;
  readonly methods: ReadonlySet<string> | undefined;
  readonly policy: Policy;
}

interface TierPolicies {
  readonly tier: TierConfig;
  readonly minute: Policy | undefined;
  readonly hour: Policy | undefined;
  /** Routes of this tier by the bit set of matching rules (when there are at most {@link MAX_CACHED_RULES}). */
  readonly routes: Map<number, Route>;
}

/** Rule sets are cached by a 31-bit mask: beyond that many rules, a route is built per request. */
const MAX_CACHED_RULES = 31;

/** The policies one request is decided against, and what labels its metrics carry. */
export interface RequestChecks {
  readonly checks: Check[];
  /** Names of the endpoint rules that matched, in configuration order. */
  readonly rules: readonly string[];
}

/** The suffix of a tier's per-hour policy name: tier `standard` has policies `standard` and `standard.hour`. */
export const HOUR_SUFFIX = '.hour';

/**
 * The limits of one configuration, compiled: a policy per tier minute bucket, per tier hour limit, per endpoint
 * rule and class, and the public-auth bucket; the matchers of the endpoint rules, built once. A reload builds a
 * new plan, reusing the `Policy` objects of the previous plan whose limits did not change, because the memory
 * store files buckets by policy object: that is how bucket state survives a reload.
 */
export class LimitPlan {
  /** The engine over every policy of this plan. */
  readonly limiter: Limiter;
  /** The bucket failed credentials count against, keyed by client IP. */
  readonly publicAuth: Policy;
  readonly #tiers = new Map<string, TierPolicies>();
  readonly #rules: CompiledRule[] = [];
  readonly #prefix: string;
  readonly #legacy: LegacyParts;

  /**
   * @param config - the resolved configuration.
   * @param store - the store shared by every plan of this gateway.
   * @param previous - the plan being replaced, whose unchanged policies are reused.
   */
  constructor(config: GatewayConfig, store: RateLimitStore, previous?: LimitPlan) {
    const reuse = new Map<string, Policy>();
    for (const p of previous?.limiter.policies ?? []) reuse.set(p.name, p);
    const byName = new Map<string, Policy>();
    const policy = (name: string, quota: number, window: number, burst: number): Policy => {
      const existing = byName.get(name);
      if (existing !== undefined) return existing;
      const old = reuse.get(name);
      const p =
        old !== undefined &&
        old.quota === quota &&
        old.window === window &&
        old.burst === burst &&
        !old.shadow
          ? old
          : definePolicy({ name, quota, window, burst });
      byName.set(name, p);
      return p;
    };
    for (const tier of Object.values(config.tiers)) {
      this.#tiers.set(tier.name, {
        tier,
        minute: tier.unlimited ? undefined : policy(tier.name, tier.perMinute, 60, tier.burst),
        // The hour limit is a bucket of the hour's size refilled over the hour: a client may spend its hour at
        // once (within the minute bucket) and regains requestsPerHour / 3600 per second (docs/DECISIONS.md).
        hour:
          tier.perHour === undefined
            ? undefined
            : policy(`${tier.name}${HOUR_SUFFIX}`, tier.perHour, 3600, tier.perHour),
        routes: new Map(),
      });
    }
    for (const rule of config.endpoints) {
      this.#rules.push({
        name: rule.name,
        pattern: compilePathPattern(rule.pattern, `rateLimiting.endpoints[${rule.index}].pattern`),
        methods: rule.methods === undefined ? undefined : new Set(rule.methods),
        policy: policy(rule.name, rule.limit, rule.windowSeconds, rule.burst),
      });
    }
    const pa = config.identity.publicAuth;
    this.publicAuth = policy(pa.name, pa.perMinute, 60, pa.burst);
    this.#prefix = config.keys.prefix;
    this.limiter = new Limiter({ policies: [...byName.values()], store });
    this.#legacy = new LegacyParts(this.limiter.policies);
  }

  /** The tier of this name, or `undefined`. */
  tier(name: string): TierConfig | undefined {
    return this.#tiers.get(name)?.tier;
  }

  /** The bucket key for an identity key, with the configured prefix. */
  bucketKey(identityKey: string): string {
    return this.#prefix === '' ? identityKey : this.#prefix + identityKey;
  }

  /**
   * The checks of one request: its tier's minute and hour buckets and every endpoint rule whose pattern and
   * methods match, all for the same key. Rules that share a policy (a class) are checked once.
   *
   * @param tierName - a tier of this plan that is not unlimited.
   * @param method - the request method, upper case.
   * @param path - the normalized path.
   * @param identityKey - `tenant:client`, `tenant:<t>:user:<u>`, `apikey:<hash>` or `ip:<address>`.
   */
  checksFor(tierName: string, method: string, path: string, identityKey: string): RequestChecks {
    const route = this.routeFor(tierName, method, path);
    return { checks: route.checks(this.bucketKey(identityKey)), rules: route.rules };
  }

  /**
   * The route of one request: the policies of its tier and of every endpoint rule whose pattern and methods
   * match, with what is constant for that set (header parts, metric labels) computed once. The patterns are
   * matched per request; the route for the resulting rule set is cached per tier, so the hot path builds no
   * policy list, header value or label object.
   *
   * @param tierName - a tier of this plan that is not unlimited.
   * @param method - the request method, upper case.
   * @param path - the normalized path.
   */
  routeFor(tierName: string, method: string, path: string): Route {
    const t = this.#tiers.get(tierName);
    const rules = this.#rules;
    if (t === undefined || rules.length > MAX_CACHED_RULES) return this.#route(t, method, path);
    let mask = 0;
    for (let i = 0; i < rules.length; i++) {
      const r = rules[i];
      if (r.methods !== undefined && !r.methods.has(method)) continue;
      if (r.pattern.match(path)) mask |= 1 << i;
    }
    let route = t.routes.get(mask);
    if (route === undefined) {
      route = this.#route(t, method, path);
      t.routes.set(mask, route);
    }
    return route;
  }

  #route(t: TierPolicies | undefined, method: string, path: string): Route {
    const policies: Policy[] = [];
    if (t?.minute !== undefined) policies.push(t.minute);
    if (t?.hour !== undefined) policies.push(t.hour);
    let rules: string[] | undefined;
    for (const r of this.#rules) {
      if (r.methods !== undefined && !r.methods.has(method)) continue;
      if (!r.pattern.match(path)) continue;
      if (policies.includes(r.policy)) continue;
      policies.push(r.policy);
      if (rules === undefined) rules = [];
      rules.push(r.name);
    }
    return new Route(t?.tier.name ?? '', policies, rules ?? NO_RULES, this.#legacy);
  }

  /**
   * The rate-limit headers of any decision of this plan (the public-auth bucket included), as
   * `formatDecisionHeaders` gives them; decisions over a route are faster through `Route.headers`.
   */
  formatHeaders(decision: Decision, mode: HeaderMode, nowMs: number): HeaderPair[] {
    return formatDecisionHeaders(decision, { mode, nowMs });
  }

  /** Every check that could apply to a key, one per policy: what the admin API inspects and resets. */
  allChecks(identityKey: string): Check[] {
    const key = this.bucketKey(identityKey);
    return this.limiter.policies.map((policy) => ({ policy, key }));
  }
}

const NO_RULES: readonly string[] = Object.freeze([]);
