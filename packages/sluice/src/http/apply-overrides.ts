import type { Check, OverrideSnapshot, OverrideStore, Policy } from '../core/index.js';
import { type CompiledOverride, OverrideIndex } from './override-index.js';
import { HeaderPlan, legacyPolicyName } from './rate-limit-headers.js';
import type { RulePlan } from './rule-plans.js';

/** What the overrides make of one request's checks. */
export type OverrideResult =
  | { readonly kind: 'block'; readonly entry: CompiledOverride }
  /** The plan and checks with overridden policies replaced and unlimited ones left out (possibly none left). */
  | { readonly kind: 'plan'; readonly plan: RulePlan; readonly checks: Check[] };

/**
 * Applies the run-time overrides of a store to a request's checks. The compiled index is rebuilt only when the
 * store hands out a new snapshot; with no rule in force the limiter skips the whole step after one comparison.
 */
export class OverrideApplier {
  readonly #store: OverrideStore;
  readonly #prefix: string;
  #snapshot: OverrideSnapshot | undefined;
  /** The index of {@link OverrideApplier.#snapshot}, kept while empty so that later changes apply to it. */
  #built: OverrideIndex | undefined;
  #index: OverrideIndex | undefined;

  /**
   * @param store - where the rules live.
   * @param keyPrefix - the limiter's bucket key prefix.
   */
  constructor(store: OverrideStore, keyPrefix: string) {
    this.#store = store;
    this.#prefix = keyPrefix;
  }

  /** The index of the rules in force, or `undefined` when there are none. */
  current(): OverrideIndex | undefined {
    const s = this.#store.snapshot();
    if (s !== this.#snapshot) {
      // A store that logs its changes hands over what changed since the snapshot this index was built for: applied
      // rule by rule, so a write costs its own rule instead of a compile of every rule.
      const held = this.#snapshot;
      const deltas =
        held === undefined || this.#built === undefined ? undefined : s.changesSince?.(held.version);
      this.#snapshot = s;
      if (deltas !== undefined && this.#built !== undefined) this.#built.apply(deltas);
      else this.#built = s.rules.length === 0 ? undefined : new OverrideIndex(s.rules, this.#prefix);
      this.#index = this.#built !== undefined && this.#built.size > 0 ? this.#built : undefined;
    }
    return this.#index;
  }

  /**
   * The request under the rules: a block, or the plan and checks to decide, or `undefined` when no rule
   * matches (the common case allocates nothing).
   *
   * @param index - from {@link OverrideApplier.current}.
   * @param plan - the request's plan.
   * @param checks - its checks, keys prefixed.
   * @param tier - the caller's tier.
   * @param ip - the client IP.
   * @param clock - epoch milliseconds, read only when a rule matches.
   * @param unhashed - per check, its key before a key over the length limit was hashed (from
   *   `RulePlans.unhashedKeys`): patterns match the key as built, not its hash.
   * @param tenant - the caller's tenant: a rule on the whole tenant applies to every check, whatever its key.
   */
  apply(
    index: OverrideIndex,
    plan: RulePlan,
    checks: readonly Check[],
    tier: string | undefined,
    ip: string | undefined,
    clock: () => number,
    unhashed?: readonly (string | undefined)[],
    tenant?: string,
  ): OverrideResult | undefined {
    const n = checks.length;
    let found: (CompiledOverride | undefined)[] | undefined;
    let first: CompiledOverride | undefined;
    let single = true;
    let mask = 0;
    for (let i = 0; i < n; i++) {
      const raw = unhashed?.[i];
      const { policy, key } = checks[i];
      // A concurrency policy counts requests in flight: a limit rule (rate sizes) leaves it as configured.
      const slots = policy.concurrent > 0;
      let e = index.find(raw ?? key, policy.name, tier, ip, clock, tenant, slots);
      if (raw !== undefined) {
        // A rule may also name the hashed key itself (a penalty block sets the key it was limited under).
        const h = index.find(key, policy.name, tier, ip, clock, undefined, slots);
        if (h !== undefined && (e === undefined || h.rank > e.rank)) e = h;
      }
      if (e === undefined) continue;
      if (e.effect === 'block') return { kind: 'block', entry: e };
      found ??= new Array(n);
      found[i] = e;
      if (i < 30) mask |= 1 << i;
      if (first === undefined) first = e;
      else if (first !== e) single = false;
    }
    if (found === undefined || first === undefined) return undefined;
    const out: Check[] = [];
    for (let i = 0; i < n; i++) {
      const e = found[i];
      if (e === undefined) out.push(checks[i]);
      else if (e.effect === 'limit') out.push({ policy: e.policyFor(checks[i].policy), key: checks[i].key });
    }
    let derived: RulePlan | undefined;
    if (single && n <= 30) {
      let byMask = first.plans.get(plan) as Map<number, RulePlan> | undefined;
      if (byMask === undefined) {
        byMask = new Map();
        first.plans.set(plan, byMask);
      }
      derived = byMask.get(mask);
      if (derived === undefined) {
        derived = derivePlan(plan, found);
        byMask.set(mask, derived);
      }
    } else {
      derived = derivePlan(plan, found);
    }
    return { kind: 'plan', plan: derived, checks: out };
  }
}

/** A plan with each overridden policy replaced (or left out when unlimited); it never queues. */
function derivePlan(plan: RulePlan, found: readonly (CompiledOverride | undefined)[]): RulePlan {
  const policies: Policy[] = [];
  const keyedBy: RulePlan['keyedBy'][number][] = [];
  let problemCodes: Map<Policy, string> | undefined;
  plan.policies.forEach((base, i) => {
    const e = found[i];
    if (e?.effect === 'unlimited') return;
    const p = e === undefined ? base : e.policyFor(base);
    policies.push(p);
    keyedBy.push(plan.keyedBy[i]);
    const code = plan.problemCodes?.get(base);
    if (code === undefined) return;
    problemCodes ??= new Map();
    problemCodes.set(p, code);
  });
  return Object.freeze({
    ...plan,
    keyedBy,
    policies,
    header: new HeaderPlan(policies),
    legacyNames: new Map(policies.map((p) => [p, legacyPolicyName(p.name)])),
    queue: undefined,
    problemCodes,
  });
}
