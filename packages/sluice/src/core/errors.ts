/**
 * Stable error codes of Sluice. A code never changes meaning once released; `docs/errors.md` has one row per code.
 * A denial is never an error: it is a {@link Decision} with `allowed: false`.
 */
export const ErrorCode = {
  /** An option is missing, of the wrong type or out of range; the message names option, expectation and value. */
  InvalidOption: 'ERR_INVALID_OPTION',
  /** A policy name was asked for that the limiter was not configured with. */
  UnknownPolicy: 'ERR_UNKNOWN_POLICY',
  /** Two policies share a name, so their headers and buckets could not be told apart. */
  DuplicatePolicy: 'ERR_DUPLICATE_POLICY',
  /** A cost that is not a whole number of at least 1. */
  InvalidCost: 'ERR_INVALID_COST',
  /** A call reached a store after `close()`. */
  StoreClosed: 'ERR_STORE_CLOSED',
  /** A wait for tokens was cancelled through its AbortSignal; the reserved tokens were returned. */
  Aborted: 'ERR_ABORTED',
  /** The store could not answer (network, timeout, script error) and the failure mode says to surface it. */
  StoreUnavailable: 'ERR_STORE_UNAVAILABLE',
  /** Configuration rejected at start or reload; `details` lists every violation with its path. */
  InvalidConfig: 'ERR_INVALID_CONFIG',
  /** A Redis Cluster store got checks whose keys hash to different slots, so one atomic script cannot hold them. */
  CrossSlot: 'ERR_CROSS_SLOT',
  /** The client SDK gave up on a 429 or 503 it meant to retry; `details.reason` says why (see docs/errors.md). */
  RateLimitExceeded: 'ERR_RATE_LIMIT_EXCEEDED',
  /** A quota webhook delivery was given up (attempts exhausted or a non-retryable status); `details.reason` says why. */
  WebhookFailed: 'ERR_WEBHOOK_FAILED',
  /** A rate-limit service request (Envoy ShouldRateLimit) is malformed: empty domain, no descriptors, too many, empty entries. */
  InvalidRateLimitRequest: 'ERR_INVALID_RATE_LIMIT_REQUEST',
  /** A memory store was asked for more distinct policy objects than it can tell apart (65,535). */
  TooManyPolicies: 'ERR_TOO_MANY_POLICIES',
  /** An entry point needs an optional peer package that is not installed; the message names the install command. */
  MissingPeer: 'ERR_MISSING_PEER',
  /** The shared table's room for overrides is used up; remove rules or start with a larger `overrideBytes`. */
  OverridesFull: 'ERR_OVERRIDES_FULL',
} as const;

/** One of the values of {@link ErrorCode}. */
export type ErrorCode = (typeof ErrorCode)[keyof typeof ErrorCode];

/**
 * The one base class of every error Sluice throws. Match on `code`, never on the message, which may be reworded.
 *
 * @example
 * ```ts
 * try { limiter.policy('rl.nope'); } catch (e) { if (e instanceof SluiceError && e.code === 'ERR_UNKNOWN_POLICY') ... }
 * ```
 */
export class SluiceError extends Error {
  /** The stable code of this failure. */
  readonly code: ErrorCode;
  /** Structured facts about the failure (option name, given value, violations), safe to log. */
  readonly details: Readonly<Record<string, unknown>>;

  /**
   * @param code - the stable code.
   * @param message - a sentence for people; names the option, the expectation and the given value where it applies.
   * @param details - structured facts for programs and logs.
   * @param options - standard error options, for example `cause`.
   */
  constructor(
    code: ErrorCode,
    message: string,
    details: Record<string, unknown> = {},
    options?: ErrorOptions,
  ) {
    super(message, options);
    this.name = 'SluiceError';
    this.code = code;
    this.details = Object.freeze({ ...details });
  }
}
