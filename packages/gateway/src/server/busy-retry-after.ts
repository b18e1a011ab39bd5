/**
 * The `Retry-After` of the gateway's busy answers (503 `upstream_queue_timeout`, 429 `too_many_request_bodies`):
 * one `upstream.queueTimeout`, in whole seconds rounded up, at least 1. When a connection or the client's own
 * upload frees is unknown; a retry sooner than one queue wait would most likely meet the same full pool, and a
 * value that follows the setting spreads the retries of a burst refused together over that long.
 *
 * @param queueTimeoutMs - `upstream.queueTimeout` in milliseconds; `0` (no bound) gives 1.
 * @returns the header value, in seconds.
 */
export function busyRetryAfter(queueTimeoutMs: number): string {
  return String(Math.max(1, Math.ceil(queueTimeoutMs / 1000)));
}
