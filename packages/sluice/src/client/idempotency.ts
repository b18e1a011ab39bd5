/** RFC 9110 section 9.2.2: methods whose repetition has the same effect as one request. */
const IDEMPOTENT = new Set(['GET', 'HEAD', 'OPTIONS', 'TRACE', 'PUT', 'DELETE']);

/**
 * True when repeating the request cannot do harm twice: an idempotent method, or any method carrying an
 * `Idempotency-Key` header (draft-ietf-httpapi-idempotency-key-header), with which the server deduplicates.
 *
 * @param method - the request method, any case.
 * @param headers - the request headers.
 */
export function isIdempotent(method: string, headers: Headers): boolean {
  return IDEMPOTENT.has(method.toUpperCase()) || headers.has('idempotency-key');
}
