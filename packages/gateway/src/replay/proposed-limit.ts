/** One proposed limit. */
export interface ProposedLimit {
  readonly kind: 'tier' | 'rule';
  /** The tier's name, or the rule's pattern. */
  readonly name: string;
  /** The policy's name in headers and metrics (a tier's minute policy, or the rule's `name`, default its pattern). */
  readonly policy: string;
  /**
   * For a tier: requests per minute, burst, requests per hour (0 for none: the logs span less than an hour and the
   * file has none); for a rule: limit per window and burst.
   */
  perMinute: number;
  burst: number;
  perHour: number;
  /**
   * A tier's `requestsPerHour` is the file's own, not measured: the logs span less than an hour (raised only when
   * it limited in them).
   */
  readonly hourKept?: true;
  /**
   * The logs span less than the limit's window (a tier's minute, a rule's window): the limit is each client's
   * pace over the span carried over the whole window, not a measured peak.
   */
  readonly extrapolated?: true;
  /** A rule's window in seconds (60 unless the configuration's rule has another). */
  readonly windowSeconds: number;
  /** The rule's position in `rateLimiting.endpoints` (configuration mode), for writing it back. */
  readonly index?: number;
  /** Rules whose limits come from a class or a stepped refill are reported, not changed. */
  readonly kept?: string;
}
