import type { Check, Policy } from '../core/index.js';
import { boundKey } from './key-hash.js';
import { requestIpKey } from './keys.js';
import {
  type EndpointPattern,
  type FirstLiteral,
  firstLiteralOf,
  firstSegmentIs,
  PathSegments,
} from './path-pattern.js';
import { HeaderPlan, legacyPolicyName } from './rate-limit-headers.js';
import type { CompiledRule } from './rules.js';
import { SettlePlan } from './settle-plan.js';
import type { HttpRequestInfo, Identity } from './types.js';

/** The precomputed state of one combination of matching rules. */
export interface RulePlan {
  readonly rules: readonly CompiledRule[];
  /** The matching rules' names, in configuration order (frozen: verdicts share it). */
  readonly names: readonly string[];
  /** One entry per check: the rule that keys it. */
  readonly keyedBy: readonly CompiledRule[];
  readonly policies: readonly Policy[];
  readonly header: HeaderPlan;
  readonly captures: boolean;
  readonly cost: number | ((request: HttpRequestInfo) => number);
  /** Per policy, its legacy `X-RateLimit-Policy` value. */
  readonly legacyNames: ReadonlyMap<Policy, string>;
  /** The outcome of a denial over this plan. */
  readonly denied: 'limited';
  /**
   * The first policy with `queue` settings: a denial over this plan then waits for tokens instead (the policy
   * names the queue in metrics). `undefined` keeps the plan's decisions in the same tick.
   */
  readonly queue: Policy | undefined;
  /** The 429 problem `code` per policy, from the rule that keys it; `undefined` when no rule sets one. */
  readonly problemCodes: ReadonlyMap<Policy, string> | undefined;
  /** The rules that settle a cost from the response or count only some responses; `undefined` when none. */
  readonly settle: SettlePlan | undefined;
}

/** Plans are cached per combination of matching rules up to this many combinations. */
const MAX_PLANS = 4096;
/** The most checks lists of one length kept for reuse (a replay's batch holds 32 decisions at a time). */
const MAX_FREE = 64;

/** A check of a list this class made: written over once the list is given back. */
type WritableCheck = { policy: Policy; key: string };

/**
 * The rules of one limiter and the plans of the rule combinations that match together, built on first use: the
 * set of combinations is small in practice and each plan holds only precomputed strings, so a request matches
 * its rules, finds its plan by a bit mask and builds no policy list, header value or name list.
 */
export class RulePlans {
  readonly #rules: readonly CompiledRule[];
  readonly #plans = new Map<number | string, RulePlan>();
  readonly #prefix: string;
  readonly #maxKeyLength: number;
  /*
   * Up to 30 rules, the mask of matching rules is put together from precomputed parts rather than by asking each
   * rule (a gateway has a rule per tier and per endpoint): rules without conditions always match; a rule with
   * only tiers is found through its tiers; the path of a rule with only an endpoint is matched against one cut
   * of the request path shared by all of them; any other rule is asked as it is.
   */
  #always = 0;
  readonly #byTier = new Map<string, number>();
  readonly #pathRules: { readonly bit: number; readonly rule: CompiledRule; readonly first: number }[] = [];
  readonly #otherRules: { readonly bit: number; readonly rule: CompiledRule }[] = [];
  readonly #segments: PathSegments;
  /*
   * The distinct literal first segments of the endpoint rules and of the `alsoCut` endpoints: a path's first
   * segment is compared with each once (`#firstsOf`), and a pattern is walked only when its own is among those that
   * match (bit `first`; 0 for a pattern whose first segment is not literal, always walked). Seven patterns (the
   * default exemptions and three endpoint rules) were seven walks through two closures each (D-G142).
   */
  readonly #firsts: FirstLiteral[] = [];
  readonly #alsoFirst: Int32Array;
  #firstsPath: string | undefined;
  #firstsMask = 0;
  #lastMask = 0;
  #lastPlan: RulePlan | undefined;
  #lastTier: string | undefined;
  #lastTierMask = 0;
  /** Per check of the last {@link RulePlans.checks} call, the prefixed key before hashing, where it was hashed. */
  readonly #unhashed: (string | undefined)[] = [];
  #anyHashed = false;
  /** Checks lists given back by {@link RulePlans.recycle}, by length (up to 7), written over by the next requests. */
  readonly #free: WritableCheck[][][] = Array.from({ length: 8 }, () => []);

  /**
   * @param rules - the compiled rules, in configuration order.
   * @param keyPrefix - the prefix of every bucket key.
   * @param maxKeyLength - keys longer than this are hashed.
   * @param alsoCut - other endpoints matched against the same cut of a request path (the exempt endpoints).
   */
  constructor(
    rules: readonly CompiledRule[],
    keyPrefix: string,
    maxKeyLength: number,
    alsoCut: readonly EndpointPattern[] = [],
  ) {
    this.#rules = rules;
    this.#prefix = keyPrefix;
    this.#maxKeyLength = maxKeyLength;
    let depth = 0;
    for (const e of alsoCut) depth = Math.max(depth, e.pattern.depth);
    this.#alsoFirst = Int32Array.from(alsoCut, (e) => this.#firstBit(e.pattern));
    if (rules.length > 30) {
      this.#segments = new PathSegments(depth);
      return;
    }
    rules.forEach((rule, i) => {
      const bit = 1 << i;
      const plain = rule.operations === undefined && rule.methods === undefined;
      if (plain && rule.endpoint === undefined && rule.tiers === undefined) this.#always |= bit;
      else if (plain && rule.endpoint === undefined && rule.tiers !== undefined) {
        for (const t of rule.tiers) this.#byTier.set(t, (this.#byTier.get(t) ?? 0) | bit);
      } else if (plain && rule.endpoint !== undefined && rule.tiers === undefined) {
        this.#pathRules.push({ bit, rule, first: this.#firstBit(rule.endpoint.pattern) });
        depth = Math.max(depth, rule.endpoint.pattern.depth);
      } else this.#otherRules.push({ bit, rule });
    });
    this.#segments = new PathSegments(depth);
  }

  /**
   * A request path cut into segments, deep enough for the rules' endpoints and those given as `alsoCut`. One
   * cut is kept and reused while the path stays the same (the exemptions and then the rules of one request).
   */
  cut(path: string): PathSegments {
    const s = this.#segments;
    return s.path === path ? s : s.cut(path);
  }

  /**
   * Whether endpoint `i` of `alsoCut` may match the cut path: false only when its literal first segment is not the
   * path's, so that its walk would fail at once. Call with the cut {@link RulePlans.cut} returned.
   */
  mayMatchAlso(i: number, cut: PathSegments): boolean {
    const first = this.#alsoFirst[i];
    return first === 0 || (this.#firstsOf(cut) & first) !== 0;
  }

  /** The bit of a pattern's literal first segment among `#firsts` (added when new), or 0 when any may match. */
  #firstBit(pattern: EndpointPattern['pattern']): number {
    const f = firstLiteralOf(pattern);
    if (f === undefined) return 0;
    const firsts = this.#firsts;
    for (let i = 0; i < firsts.length; i++) {
      if (firsts[i].text === f.text && firsts[i].exact === f.exact) return 1 << i;
    }
    if (firsts.length >= 30) return 0;
    firsts.push(f);
    return 1 << (firsts.length - 1);
  }

  /** The bits of the literal first segments that the cut path's first segment is, computed once per path. */
  #firstsOf(cut: PathSegments): number {
    if (cut.path === this.#firstsPath) return this.#firstsMask;
    const firsts = this.#firsts;
    let mask = 0;
    for (let i = 0; i < firsts.length; i++) if (firstSegmentIs(cut, firsts[i])) mask |= 1 << i;
    this.#firstsPath = cut.path;
    this.#firstsMask = mask;
    return mask;
  }

  /** The plan of the rules that match a request, or `undefined` when none does. */
  match(req: HttpRequestInfo, identity: Identity | undefined = req.identity): RulePlan | undefined {
    const rules = this.#rules;
    const onlyOps = req.operationRulesOnly === true;
    if (rules.length <= 30 && !onlyOps) {
      let mask = this.#always;
      if (this.#byTier.size > 0) {
        const tier = identity?.tier;
        if (typeof tier === 'string') {
          // Consecutive requests mostly come from one tier.
          if (tier !== this.#lastTier) {
            this.#lastTier = tier;
            this.#lastTierMask = this.#byTier.get(tier) ?? 0;
          }
          mask |= this.#lastTierMask;
        }
      }
      const paths = this.#pathRules;
      if (paths.length > 0) {
        const cut = this.cut(req.path);
        const firsts = this.#firstsOf(cut);
        for (let i = 0; i < paths.length; i++) {
          const p = paths[i];
          if (p.first !== 0 && (firsts & p.first) === 0) continue;
          if ((p.rule.endpoint as EndpointPattern).matchSegments(req.method, cut)) mask |= p.bit;
        }
      }
      const others = this.#otherRules;
      for (let i = 0; i < others.length; i++) {
        if (others[i].rule.match(req, identity)) mask |= others[i].bit;
      }
      return this.#planOfMask(mask);
    }
    if (rules.length <= 30) {
      // The operations-only pass (the gateway's checks of a request's operation class): each rule is asked.
      let mask = 0;
      for (let i = 0; i < rules.length; i++) {
        if (rules[i].operations === undefined) continue;
        if (rules[i].match(req, identity)) mask |= 1 << i;
      }
      return this.#planOfMask(mask);
    }
    const matched: CompiledRule[] = [];
    for (const r of rules)
      if (!(onlyOps && r.operations === undefined) && r.match(req, identity)) matched.push(r);
    if (matched.length === 0) return undefined;
    return this.#plan(matched, matched.map((r) => rules.indexOf(r)).join(','));
  }

  /** The plan of a set of matching rules given as a bit mask (a known mask finds its plan without a list). */
  #planOfMask(mask: number): RulePlan | undefined {
    if (mask === 0) return undefined;
    // Consecutive requests mostly match the same rules.
    if (mask === this.#lastMask) return this.#lastPlan;
    // The rules are picked in a function of their own: a closure over `mask` here would allocate a context on
    // every call, the common one above included (D-G141).
    const plan = this.#plans.get(mask) ?? this.#plan(rulesOfMask(this.#rules, mask), mask);
    this.#lastMask = mask;
    this.#lastPlan = plan;
    return plan;
  }

  /**
   * The checks of a request under a plan: one per policy, keyed by the first rule naming it, with the prefix.
   *
   * @param req - the request (identity and params are read).
   * @param plan - from {@link RulePlans.match}.
   * @param ip - the resolved client IP.
   * @param identity - the caller (from `identify`, else the request's).
   * @returns the checks: read them, never change them; give the list back with {@link RulePlans.recycle} only
   *   once nothing reads it (a later request's checks are then written into it).
   */
  checks(
    req: HttpRequestInfo,
    plan: RulePlan,
    ip: string | undefined,
    identity: Identity | undefined = req.identity,
  ): readonly Check[] {
    const view = withCaptures(req, plan);
    const ipk = requestIpKey(req, ip);
    const n = plan.policies.length;
    // A list given back (`recycle`) of the same length is written over: no list and no check is allocated.
    const free = n < this.#free.length ? this.#free[n] : undefined;
    const reused = free !== undefined && free.length > 0;
    const checks: WritableCheck[] = reused ? (free.pop() as WritableCheck[]) : new Array(n);
    this.#anyHashed = false;
    for (let i = 0; i < n; i++) {
      const key = plan.keyedBy[i].key(view, ipk, ip, identity);
      const full = this.#prefix === '' ? key : this.#prefix + key;
      const bounded = boundKey(full, this.#maxKeyLength);
      if (reused) {
        const c = checks[i];
        c.policy = plan.policies[i];
        c.key = bounded;
      } else checks[i] = { policy: plan.policies[i], key: bounded };
      if (bounded !== full) {
        // Overrides match the key as built (`tenant:acme:*` must still find a tenant whose client id is long).
        if (!this.#anyHashed) this.#unhashed.fill(undefined);
        this.#anyHashed = true;
        this.#unhashed[i] = full;
      }
    }
    return checks;
  }

  /**
   * Gives back a list {@link RulePlans.checks} returned, read for the last time (its decision given back too): a
   * later request's checks are written into it (D-G193). A list still read anywhere must not be given back.
   */
  recycle(checks: readonly Check[]): void {
    const n = checks.length;
    if (n >= this.#free.length) return;
    const free = this.#free[n];
    if (free.length < MAX_FREE) free.push(checks as WritableCheck[]);
  }

  /**
   * The keys of the last {@link RulePlans.checks} call as built, before a key over the length limit was hashed
   * (`undefined` where it was not), or `undefined` when none was: what run-time overrides match against. Valid
   * until the next call.
   */
  unhashedKeys(): readonly (string | undefined)[] | undefined {
    return this.#anyHashed ? this.#unhashed : undefined;
  }

  /** A key with the prefix, bounded in length. */
  bucketKey(key: string): string {
    return boundKey(this.#prefix === '' ? key : this.#prefix + key, this.#maxKeyLength);
  }

  /** The key a check holds, without the prefix (for logs and admin tools). */
  unprefixed(bucketKey: string): string {
    return this.#prefix === '' ? bucketKey : bucketKey.slice(this.#prefix.length);
  }

  #plan(matched: CompiledRule[], id: number | string): RulePlan {
    const known = this.#plans.get(id);
    if (known !== undefined) return known;
    const policies: Policy[] = [];
    const keyedBy: CompiledRule[] = [];
    for (const r of matched) {
      for (const p of r.policies) {
        if (policies.includes(p)) continue; // the first matching rule keys a policy
        policies.push(p);
        keyedBy.push(r);
      }
    }
    const first = matched[0].cost;
    let cost: RulePlan['cost'] = first;
    if (matched.some((r) => r.cost !== first)) {
      // Several costs: the largest applies, since every policy is charged the same cost all or nothing.
      cost = (req) => Math.max(...matched.map((r) => (typeof r.cost === 'function' ? r.cost(req) : r.cost)));
    }
    let problemCodes: Map<Policy, string> | undefined;
    keyedBy.forEach((r, i) => {
      if (r.problemCode === undefined) return;
      problemCodes ??= new Map();
      problemCodes.set(policies[i], r.problemCode);
    });
    const plan: RulePlan = Object.freeze({
      rules: matched,
      names: Object.freeze(matched.map((r) => r.name)),
      keyedBy,
      policies,
      header: new HeaderPlan(policies, quotaUnits(keyedBy)),
      captures: matched.some((r) => r.captures),
      cost,
      legacyNames: new Map(policies.map((p) => [p, legacyPolicyName(p.name)])),
      denied: 'limited',
      queue: policies.find((p) => p.queue !== undefined),
      problemCodes,
      settle: SettlePlan.of(keyedBy),
    });
    if (this.#plans.size < MAX_PLANS) this.#plans.set(id, plan);
    return plan;
  }
}

/** The rules whose bits are set in `mask`, in configuration order. */
function rulesOfMask(rules: readonly CompiledRule[], mask: number): CompiledRule[] {
  return rules.filter((_, i) => (mask & (1 << i)) !== 0);
}

/** Per check, its `qu` in RateLimit-Policy: `content-bytes` where the rule settles bytes; none when no rule does. */
function quotaUnits(keyedBy: readonly CompiledRule[]): (string | undefined)[] | undefined {
  if (!keyedBy.some((r) => r.settle?.source === 'bytes')) return undefined;
  return keyedBy.map((r) => (r.settle?.source === 'bytes' ? 'content-bytes' : undefined));
}

function withCaptures(req: HttpRequestInfo, plan: RulePlan): HttpRequestInfo {
  if (!plan.captures) return req;
  let params: Record<string, string | undefined> | undefined;
  for (const r of plan.rules) {
    const c = r.captures ? r.endpoint?.pattern.capture(req.path) : undefined;
    if (c !== undefined) params = { ...c, ...params };
  }
  return params === undefined ? req : { ...req, params: { ...params, ...req.params } };
}
