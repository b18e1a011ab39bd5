import type { Clock } from './clock.js';
import { monotonicClock } from './clock.js';
import type { Decision } from './decision.js';
import { ErrorCode, SluiceError } from './errors.js';
import { describeValue, invalidOption, objectOption, rejectUnknownKeys } from './options.js';
import { definePolicy, type Policy, type PolicyOptions } from './policy.js';
import type { Check, MaybePromise, RateLimitStore } from './store.js';

/** Options of {@link Limiter}. */
export interface LimiterOptions {
  /** The policies this limiter knows, as options or as policies from {@link definePolicy}. Names must be unique. */
  readonly policies: readonly (PolicyOptions | Policy)[];
  /** Where buckets live: `new MemoryStore()` from `sluice/memory`, or the Redis store. */
  readonly store: RateLimitStore;
  /** The clock that waits (`wait`) sleep on; the store keeps its own time. Default {@link monotonicClock}. */
  readonly clock?: Clock;
}

/** A check named by policy name or policy. */
export interface CheckInput {
  readonly policy: string | Policy;
  readonly key: string;
}

/** Options of {@link Limiter.wait}. */
export interface WaitOptions {
  /** Tokens to take, integer >= 1; default 1. */
  readonly cost?: number;
  /** Cancels the wait; the reserved tokens are returned and the promise rejects with `ERR_ABORTED`. */
  readonly signal?: AbortSignal;
}

/**
 * The entry point of the engine: named policies over a store. Decisions are all or nothing across policies,
 * exact to the token, and returned (a denial is `allowed: false`, never an exception).
 *
 * @example
 * ```ts
 * import { Limiter } from 'sluice';
 * import { MemoryStore } from 'sluice/memory';
 * const limiter = new Limiter({
 *   policies: [{ name: 'rl.write', quota: 120, window: 60, burst: 30 }],
 *   store: new MemoryStore(),
 * });
 * const d = limiter.check('rl.write', 'user:42'); // { allowed: true, outcomes: [{ remaining: 29, resetSeconds: 1 }] }
 * ```
 */
export class Limiter {
  /** The store the buckets live in. */
  readonly store: RateLimitStore;
  /** The policies, frozen, in the order given. */
  readonly policies: readonly Policy[];
  readonly #byName = new Map<string, Policy>();
  readonly #known = new Set<Policy>();
  readonly #clock: Clock;
  #lastName: string | undefined = undefined;
  #lastPolicy: Policy | undefined = undefined;

  /**
   * @throws SluiceError `ERR_INVALID_OPTION` for invalid options or policy fields, `ERR_DUPLICATE_POLICY` when
   * two policies share a name.
   */
  constructor(options: LimiterOptions) {
    const o = objectOption('Limiter options', options);
    rejectUnknownKeys('Limiter options', o, ['policies', 'store', 'clock']);
    if (!Array.isArray(o.policies) || o.policies.length === 0) {
      throw invalidOption('policies', 'a non-empty array of policies', o.policies);
    }
    const store = o.store as RateLimitStore | undefined;
    if (typeof store !== 'object' || store === null || typeof store.decide !== 'function') {
      throw invalidOption('store', 'a RateLimitStore (for example new MemoryStore())', store);
    }
    this.store = store;
    this.#clock = (o.clock as Clock | undefined) ?? monotonicClock;
    const list: Policy[] = [];
    o.policies.forEach((given: PolicyOptions | Policy, i: number) => {
      const policy = isPolicy(given) ? given : definePolicy(given, `policies[${i}]`);
      if (this.#byName.has(policy.name)) {
        throw new SluiceError(
          ErrorCode.DuplicatePolicy,
          `policies[${i}].name "${policy.name}" is used twice`,
          {
            option: `policies[${i}].name`,
            given: policy.name,
          },
        );
      }
      this.#byName.set(policy.name, policy);
      this.#known.add(policy);
      list.push(policy);
    });
    this.policies = Object.freeze(list);
  }

  /**
   * The policy with this name.
   *
   * @throws SluiceError `ERR_UNKNOWN_POLICY` when no policy has the name.
   */
  policy(name: string): Policy {
    const p = this.#byName.get(name);
    if (p === undefined) {
      throw new SluiceError(
        ErrorCode.UnknownPolicy,
        `unknown policy "${name}"; configured: ${[...this.#byName.keys()].join(', ')}`,
        { policy: name },
      );
    }
    return p;
  }

  /** True when a policy of this name is configured. */
  has(name: string): boolean {
    return this.#byName.has(name);
  }

  /**
   * Resolves names to policies once, for callers that decide the same shape of request many times.
   *
   * @throws SluiceError `ERR_UNKNOWN_POLICY` for a name or policy this limiter does not know.
   */
  resolve(checks: readonly CheckInput[]): Check[] {
    return checks.map(({ policy, key }) => ({ policy: this.#own(policy), key }));
  }

  /**
   * Decides one policy for one key, taking `cost` tokens when allowed.
   *
   * @param policy - the policy or its name.
   * @param key - the bucket key, for example `user:42` or `ip:203.0.113.9`.
   * @param cost - whole tokens to take, default 1.
   * @throws SluiceError `ERR_UNKNOWN_POLICY`, `ERR_INVALID_COST`.
   */
  check(policy: string | Policy, key: string, cost = 1): MaybePromise<Decision> {
    if (!Number.isSafeInteger(cost) || cost < 1) validateCost(cost, 'Limiter.check cost');
    // The last name asked for is remembered: a hot path names the same policy call after call.
    const own = policy === this.#lastName ? (this.#lastPolicy as Policy) : this.#named(policy);
    const store = this.store;
    // The general path in a method of its own: its array and object literals would count against the bytecode
    // V8 inlines into a caller, which the store's decision and its allocation need (see SingleDecision).
    return store.decideOne !== undefined
      ? store.decideOne(own, key, cost)
      : this.#decideAsList(own, key, cost);
  }

  #decideAsList(policy: Policy, key: string, cost: number): MaybePromise<Decision> {
    return this.store.decide([{ policy, key }], cost);
  }

  #named(policy: string | Policy): Policy {
    const own = this.#own(policy);
    if (typeof policy === 'string') {
      this.#lastName = policy;
      this.#lastPolicy = own;
    }
    return own;
  }

  /**
   * Decides several policies at once, all or nothing. Pass checks from {@link Limiter.resolve} on hot paths.
   *
   * @throws SluiceError `ERR_UNKNOWN_POLICY`, `ERR_INVALID_COST`.
   */
  decide(checks: readonly (Check | CheckInput)[], cost = 1): MaybePromise<Decision> {
    validateCost(cost, 'Limiter.decide cost');
    return this.store.decide(this.#checks(checks), cost);
  }

  /** The decision {@link Limiter.decide} would make, taking nothing. */
  peek(checks: readonly (Check | CheckInput)[], cost = 1): MaybePromise<Decision> {
    validateCost(cost, 'Limiter.peek cost');
    return this.store.peek(this.#checks(checks), cost);
  }

  /** Returns `cost` tokens to each check's bucket (for work that was admitted but did not happen). */
  refund(checks: readonly (Check | CheckInput)[], cost = 1): MaybePromise<void> {
    validateCost(cost, 'Limiter.refund cost');
    return this.store.refund(this.#checks(checks), cost);
  }

  /** Forgets a key's buckets: under one policy, or under every policy when `policy` is omitted. */
  reset(key: string, policy?: string | Policy): MaybePromise<void> {
    const list = policy === undefined ? this.policies : [this.#own(policy)];
    return this.store.reset(list.map((p) => ({ policy: p, key })));
  }

  /**
   * Waits for tokens instead of being rejected, within each policy's `queue` bounds (like NGINX `burst`
   * without `nodelay`). Resolves with the decision once the tokens are due; a denial (queue full, wait too
   * long, no queue configured) resolves at once with `allowed: false`.
   *
   * @throws SluiceError `ERR_ABORTED` when the signal aborts; the reserved tokens are returned first.
   */
  async wait(checks: readonly (Check | CheckInput)[], options: WaitOptions = {}): Promise<Decision> {
    const cost = options.cost ?? 1;
    validateCost(cost, 'Limiter.wait options.cost');
    const own = this.#checks(checks);
    const signal = options.signal;
    if (signal?.aborted) throw aborted(signal);
    const decision = await this.store.reserve(own, cost);
    if (!decision.allowed || decision.delayMs === 0) return decision;
    try {
      await this.#clock.sleep(decision.delayMs, signal);
    } catch (error) {
      // Only buckets that gave tokens get them back: a shadow policy that would have denied gave none.
      const taken = own.filter((_, i) => !decision.outcomes[i].limited);
      await this.store.refund(taken, cost);
      throw signal?.aborted ? aborted(signal) : error;
    }
    return decision;
  }

  #checks(checks: readonly (Check | CheckInput)[]): readonly Check[] {
    // Checks from resolve() pass through untouched, so a hot path builds nothing per decision.
    let own = true;
    for (let i = 0; i < checks.length && own; i++) {
      const p = checks[i].policy;
      own = typeof p !== 'string' && this.#known.has(p);
    }
    if (own) return checks as readonly Check[];
    const out: Check[] = new Array(checks.length);
    for (let i = 0; i < checks.length; i++) {
      const c = checks[i];
      out[i] =
        typeof c.policy !== 'string' && this.#known.has(c.policy)
          ? (c as Check)
          : { policy: this.#own(c.policy), key: c.key };
    }
    return out;
  }

  #own(policy: string | Policy): Policy {
    if (typeof policy === 'string') return this.policy(policy);
    if (this.#known.has(policy)) return policy;
    throw new SluiceError(
      ErrorCode.UnknownPolicy,
      `policy "${policy.name}" does not belong to this limiter`,
      {
        policy: policy.name,
      },
    );
  }
}

function isPolicy(value: PolicyOptions | Policy): value is Policy {
  return Object.isFrozen(value) && typeof (value as Policy).unitsPerToken === 'number';
}

/** What a cost must be; safe because bucket arithmetic multiplies it and must stay exact. */
const COST = 'a whole number of tokens (a safe integer >= 1)';

/**
 * Refuses a cost that is not a safe integer of at least 1, in the shape of {@link invalidOption} (option,
 * expectation, given value) but with its own code, ERR_INVALID_COST.
 *
 * @param option - the method and argument, for example `Limiter.decide cost`.
 */
function validateCost(cost: number, option: string): void {
  if (!Number.isSafeInteger(cost) || cost < 1) {
    const given = describeValue(cost);
    throw new SluiceError(ErrorCode.InvalidCost, `${option} must be ${COST}, got ${given}`, {
      option,
      expected: COST,
      given,
    });
  }
}

function aborted(signal: AbortSignal): SluiceError {
  return new SluiceError(
    ErrorCode.Aborted,
    'the wait for tokens was cancelled; its tokens were returned',
    {},
    {
      cause: signal.reason,
    },
  );
}
