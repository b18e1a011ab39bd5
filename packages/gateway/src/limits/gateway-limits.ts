import {
  type Check,
  type Clock,
  definePolicy,
  Limiter,
  type Policy,
  type RateLimitStore,
  type RefillOptions,
} from 'sluice';
import type { HttpLimiterOptions, HttpRequestInfo, RuleOptions } from 'sluice/http';
import type { GatewayConfig, QueueConfig, TierConfig } from '../config/gateway-config.js';
import type { ConcurrencyConfig } from '../config/resolve-concurrency.js';
import { CONCURRENT_SUFFIX, HOUR_SUFFIX } from '../config/tier-policy-names.js';
import { settleOptions } from './settle-options.js';

// The suffixes live with the configuration, whose validation refuses names that would collide with them.
export { CONCURRENT_SUFFIX, HOUR_SUFFIX };

/** The prefix of the rule that carries a tier's buckets; endpoint rule names never start with it. */
export const TIER_RULE_PREFIX = 'tier:';

/**
 * The limits of one configuration as `sluice/http` takes them: one policy per tier minute bucket, per tier
 * hour limit, per endpoint rule or class, and the public-auth bucket; one rule per limited tier (matched on
 * `identity.tier`) and one per endpoint rule (unlimited tiers are exempt before rules), keyed by the caller
 * hierarchy, except that a rule naming a class is keyed by the class's key kind. A tier or rule marked `shadow`
 * gives shadow policies: counted, never denying. A rule or class with `refill` gives a policy refilled in steps. A
 * reload builds new limits reusing the `Policy` objects of the previous ones whose limits (refill included) and
 * shadow flag did not change,
 * because the memory store files buckets by policy object: that is how bucket state survives a reload.
 */
export class GatewayLimits {
  /** The engine over every policy of this configuration. */
  readonly limiter: Limiter;
  /** The bucket failed credentials count against, keyed by client IP. */
  readonly publicAuth: Policy;
  /** The rules, exemptions and key settings to give `createHttpLimiter` (hooks added by the caller). */
  readonly options: Pick<
    HttpLimiterOptions<HttpRequestInfo>,
    | 'rules'
    | 'exempt'
    | 'publicAuth'
    | 'trustedProxies'
    | 'proxyHeader'
    | 'headers'
    | 'problemTypeBase'
    | 'requestIdHeader'
    | 'keyPrefix'
    | 'target'
  >;
  readonly #tiers: ReadonlyMap<string, TierConfig>;
  readonly #prefix: string;

  /**
   * @param config - the resolved configuration.
   * @param store - the store shared by every configuration of this gateway.
   * @param previous - the limits being replaced, whose unchanged policies are reused.
   * @param clock - the clock queued requests wait on, the store's; default monotonic time.
   */
  constructor(config: GatewayConfig, store: RateLimitStore, previous?: GatewayLimits, clock?: Clock) {
    const reuse = new Map<string, Policy>();
    for (const p of previous?.limiter.policies ?? []) reuse.set(p.name, p);
    const byName = new Map<string, Policy>();
    const policy = (
      name: string,
      quota: number,
      window: number,
      burst: number,
      shadow = false,
      q?: QueueConfig,
      refill?: RefillOptions,
    ): string => {
      if (byName.has(name)) return name;
      const old = reuse.get(name);
      const queue = q === undefined ? undefined : { limit: q.limit, maxWaitMs: q.maxWaitMs };
      // A changed shadow flag is a new policy too: the buckets a shadow counted start over once it enforces. So is
      // a change between continuous and stepped refill of the same quota and window: its bucket timeline differs.
      const same =
        old !== undefined &&
        old.quota === quota &&
        old.window === window &&
        old.burst === burst &&
        old.shadow === shadow &&
        old.queue?.limit === queue?.limit &&
        old.queue?.maxWaitMs === queue?.maxWaitMs &&
        old.refill?.tokens === refill?.tokens &&
        old.refill?.every === refill?.every;
      byName.set(
        name,
        same
          ? old
          : definePolicy({
              name,
              quota,
              window,
              burst,
              shadow,
              queue,
              ...(refill === undefined ? {} : { refill }),
            }),
      );
      return name;
    };
    // A concurrency policy: slots per key, reused on reload while its slots and hint are unchanged, so requests in
    // flight across a reload give their slots back to the buckets they took them from.
    const slots = (name: string, c: ConcurrencyConfig, shadow = false): string => {
      if (byName.has(name)) return name;
      const old = reuse.get(name);
      const same =
        old !== undefined &&
        old.concurrent === c.slots &&
        old.retryAfterHint === c.retryAfterSeconds &&
        old.shadow === shadow;
      byName.set(
        name,
        same ? old : definePolicy({ name, concurrent: c.slots, retryAfter: c.retryAfterSeconds, shadow }),
      );
      return name;
    };
    const rules: RuleOptions[] = [];
    const tiers = new Map<string, TierConfig>();
    for (const tier of Object.values(config.tiers)) {
      tiers.set(tier.name, tier);
      if (tier.unlimited) continue;
      const names = [policy(tier.name, tier.perMinute, 60, tier.burst, tier.shadow, tier.queue)];
      // The hour limit is a bucket of the hour's size refilled over the hour: a client may spend its hour at
      // once (within the minute bucket) and regains requestsPerHour / 3600 per second (docs/DECISIONS.md).
      if (tier.perHour !== undefined)
        names.push(policy(`${tier.name}${HOUR_SUFFIX}`, tier.perHour, 3600, tier.perHour, tier.shadow));
      if (tier.concurrency !== undefined)
        names.push(slots(`${tier.name}${CONCURRENT_SUFFIX}`, tier.concurrency, tier.shadow));
      rules.push({
        name: `${TIER_RULE_PREFIX}${tier.name}`,
        tier: tier.name,
        policies: names,
        key: 'caller',
        ...(tier.problemCode === undefined ? {} : { problemCode: tier.problemCode }),
        ...settleOptions(tier),
      });
    }
    for (const rule of config.endpoints) {
      rules.push({
        name: rule.name,
        path: rule.pattern,
        ...(rule.methods === undefined ? {} : { methods: rule.methods }),
        // Rules naming one class share its policy: the first rule's queue settings are the policy's.
        policies: [
          rule.concurrency === undefined
            ? policy(
                rule.name,
                rule.limit,
                rule.windowSeconds,
                rule.burst,
                rule.shadow,
                rule.queue,
                rule.refill,
              )
            : slots(rule.name, rule.concurrency, rule.shadow),
        ],
        ...(rule.problemCode === undefined ? {} : { problemCode: rule.problemCode }),
        // A rule naming a class keys by the class's kind (rl.webhook_in by webhook_id, rl.read by principal).
        key: rule.className === undefined ? 'caller' : (config.classes[rule.className]?.key ?? 'caller'),
        ...settleOptions(rule),
      });
    }
    const pa = config.identity.publicAuth;
    const [paQuota, paWindow] =
      pa.refill === undefined ? [pa.perMinute, 60] : [pa.refill.tokens, pa.refill.every];
    this.publicAuth = byName.get(
      policy(pa.name, paQuota, paWindow, pa.burst, false, undefined, pa.refill),
    ) as Policy;
    this.limiter = new Limiter({
      policies: [...byName.values()],
      store,
      ...(clock === undefined ? {} : { clock }),
    });
    this.#tiers = tiers;
    this.#prefix = config.keys.prefix;
    const unlimited = [...tiers.values()].filter((t) => t.unlimited).map((t) => t.name);
    this.options = Object.freeze({
      rules,
      exempt: {
        endpoints: config.exemptions.endpoints,
        loopback: config.server.mode === 'development' && config.exemptions.loopbackInDevelopment,
        tiers: unlimited,
      },
      publicAuth: { policy: pa.name },
      trustedProxies: config.server.trustedProxies,
      proxyHeader: config.server.proxyHeader,
      headers: config.headers.mode,
      ...(config.problems.typeBase === undefined ? {} : { problemTypeBase: config.problems.typeBase }),
      requestIdHeader: config.server.requestIdHeader,
      keyPrefix: config.keys.prefix,
      target: config.target,
    });
  }

  /** The tier of this name, or `undefined`. */
  tier(name: string): TierConfig | undefined {
    return this.#tiers.get(name);
  }

  /** Every check that could apply to a key, one per policy: what the admin API inspects and resets. */
  allChecks(identityKey: string): Check[] {
    const key = this.#prefix === '' ? identityKey : this.#prefix + identityKey;
    return this.limiter.policies.map((policy) => ({ policy, key }));
  }
}
