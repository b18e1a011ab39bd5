import { ErrorCode, SluiceError } from '../core/errors.js';

/** Why the client stopped instead of retrying. */
export type GiveUpReason =
  /** The server's Retry-After is longer than `maxBackoffSeconds`: waiting silently that long is not a retry. */
  | 'retry-after-exceeds-cap'
  /** `maxRetries` retries were spent and the server still refused. */
  | 'retries-exhausted'
  /** The request body is a stream, which was consumed by the first attempt and cannot be sent again. */
  | 'body-not-replayable'
  /** Pre-emptive waiting: the known state says the origin admits nothing for longer than `maxBackoffSeconds`. */
  | 'wait-exceeds-cap';

/**
 * Thrown by the client when the server refused with a retryable status (429, 503 or another of `retryStatuses`)
 * and the client decided to stop rather than retry, or when pre-emptive waiting would exceed the cap. The server's
 * problem body (RFC 9457) is attached, so a caller can show its `detail` or read its `retryAfter`.
 *
 * A response the client did not mean to retry (retries disabled, a non-idempotent method on 503, `shouldRetry`
 * said no) is returned as a `Response`, like `fetch` does; this error means only "gave up".
 *
 * @example
 * ```ts
 * try {
 *   await client.fetch('/api/report');
 * } catch (e) {
 *   if (e instanceof RateLimitExceededError) showBanner(e.problem?.detail ?? e.message, e.retryAfterSeconds);
 *   else throw e;
 * }
 * ```
 */
export class RateLimitExceededError extends SluiceError {
  /** Why the client stopped. */
  readonly reason: GiveUpReason;
  /** The status of the last response; `undefined` for `wait-exceeds-cap`, where nothing was sent. */
  readonly status: number | undefined;
  /** The last response's body parsed as JSON when its media type is JSON (`application/problem+json`). */
  readonly problem: Record<string, unknown> | undefined;
  /** Seconds the server (or the known state) asked to wait, when known. */
  readonly retryAfterSeconds: number | undefined;
  /** Requests sent, retries included. */
  readonly attempts: number;
  /** The request URL. */
  readonly url: string;
  /** The last response, its body still readable (rebuilt from the bytes read); `undefined` when nothing was sent. */
  readonly response: Response | undefined;

  /**
   * @param message - a sentence for people.
   * @param facts - the structured facts, also copied into `details`.
   */
  constructor(
    message: string,
    facts: {
      reason: GiveUpReason;
      status: number | undefined;
      problem: Record<string, unknown> | undefined;
      retryAfterSeconds: number | undefined;
      attempts: number;
      url: string;
      response: Response | undefined;
    },
  ) {
    super(ErrorCode.RateLimitExceeded, message, {
      reason: facts.reason,
      status: facts.status,
      retryAfterSeconds: facts.retryAfterSeconds,
      attempts: facts.attempts,
      url: facts.url,
    });
    this.name = 'RateLimitExceededError';
    this.reason = facts.reason;
    this.status = facts.status;
    this.problem = facts.problem;
    this.retryAfterSeconds = facts.retryAfterSeconds;
    this.attempts = facts.attempts;
    this.url = facts.url;
    this.response = facts.response;
  }
}
