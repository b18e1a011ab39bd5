import type { Decision } from './decision.js';
import type { Policy } from './policy.js';

/** A value now or later: the memory store answers synchronously, remote stores asynchronously. */
export type MaybePromise<T> = T | Promise<T>;

/** One policy applied to one key. A request usually carries one to three. */
export interface Check {
  readonly policy: Policy;
  readonly key: string;
}

/**
 * The contract every bucket store fulfils, small enough for a remote store to do each call in one atomic step.
 * `storeConformance` (subpath `./testing`) holds a store to it: identical decisions and header values for the
 * same sequence of calls and clock readings.
 */
export interface RateLimitStore {
  /** A short name for logs and metrics: `memory`, `redis`. */
  readonly kind: string;
  /**
   * Decides all checks at once: if any enforcing policy lacks `cost` tokens, none is taken.
   *
   * @param checks - the request's policies and keys; keys of different policies never share a bucket.
   * @param cost - whole tokens to take, validated by the caller (integer >= 1).
   */
  decide(checks: readonly Check[], cost: number): MaybePromise<Decision>;
  /**
   * Optional fast path for a request with one policy: the same decision as `decide([{ policy, key }], cost)`
   * without building the check list.
   */
  decideOne?(policy: Policy, key: string, cost: number): MaybePromise<Decision>;
  /**
   * Like `decide`, but a policy with `queue` settings may go into debt within its bounds; the decision then is
   * allowed with `delayMs` to wait. Policies without a queue behave as in `decide`.
   */
  reserve(checks: readonly Check[], cost: number): MaybePromise<Decision>;
  /** The decision `decide` would make, without taking anything. */
  peek(checks: readonly Check[], cost: number): MaybePromise<Decision>;
  /** Returns `cost` tokens to each check's bucket, never above its burst. */
  refund(checks: readonly Check[], cost: number): MaybePromise<void>;
  /**
   * Optional: settles a cost known only after the response (tokens a model spent, bytes sent): `deltaTokens`
   * (an integer) is what the request turned out to cost less what admission took. Negative gives tokens back,
   * never above the burst; positive takes them even below zero, a debt of at most one burst
   * (`policy.settleDebtUnits`) that the next requests wait out. Never refuses: the request already ran.
   */
  settle?(checks: readonly Check[], deltaTokens: number): MaybePromise<void>;
  /** Forgets the checks' buckets, so each starts full again. */
  reset(checks: readonly Check[]): MaybePromise<void>;
  /** Releases timers and connections; later calls fail with `ERR_STORE_CLOSED`. */
  close(): MaybePromise<void>;
}
