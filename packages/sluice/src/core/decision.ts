import type { Policy } from './policy.js';

/** Why a decision came out as it did. */
export type DecisionReason =
  /** Every enforcing policy had the tokens; they were taken. */
  | 'allowed'
  /** At least one enforcing policy lacked the tokens; none was taken. */
  | 'limited'
  /** The cost is larger than a policy's burst, so no wait could ever satisfy it. */
  | 'cost_exceeds_burst'
  /** The store could not answer and its failure mode denies (`closed`). */
  | 'store_unavailable'
  /** The store could not answer and its failure mode admits (`open`). */
  | 'store_unavailable_open';

/** The state of one policy's bucket after a decision: what the headers of that policy say. */
export interface PolicyOutcome {
  /** The policy decided. */
  readonly policy: Policy;
  /** The key of the bucket (already namespaced by policy inside the store). */
  readonly key: string;
  /** True when this policy lacked the tokens (for a shadow policy: would have denied). */
  readonly limited: boolean;
  /** r: whole tokens left after the decision, floor, never negative. */
  readonly remaining: number;
  /** t: seconds until the bucket is full again, ceil, 0 when full. */
  readonly resetSeconds: number;
  /** Seconds until this policy would admit the same cost, at least 1 when limited, else 0. */
  readonly retryAfterSeconds: number;
}

/**
 * The answer for one request over all of its policies, decided all or nothing. A denial is this value with
 * `allowed: false`, never an exception.
 */
export interface Decision {
  /** True when the request may proceed (now, or after `delayMs` for a reservation). */
  readonly allowed: boolean;
  /** Why. */
  readonly reason: DecisionReason;
  /** The cost asked for. */
  readonly cost: number;
  /** The largest Retry-After among enforcing policies that denied; 0 when allowed. */
  readonly retryAfterSeconds: number;
  /** For a reservation: how long the caller must wait before proceeding; otherwise 0. */
  readonly delayMs: number;
  /** One outcome per policy, in the order the checks were given. */
  readonly outcomes: readonly PolicyOutcome[];
  /** The enforcing (non-shadow) policies that denied. Empty when allowed. */
  readonly violated: readonly PolicyOutcome[];
}

/** Shared empty list, so allowed decisions allocate no array for `violated`. */
export const NO_OUTCOMES: readonly PolicyOutcome[] = Object.freeze([]);
