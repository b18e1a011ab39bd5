import { readHeader } from './header-source.js';
import type { HeaderSource } from './types.js';

/**
 * The most bytes of a denied request's unread body that a server reads and drops to keep the connection: enough
 * for any form or JSON document, small next to the cost of a new connection.
 */
export const DENIAL_DRAIN_LIMIT = 64 * 1024;

/**
 * Whether the answer to a denied request should close the connection (with `Connection: close`, before the head
 * is written) instead of keeping it. A request without a body, or with a declared body of at most `limit` bytes,
 * keeps it: Node reads the rest of the body after the answer and the socket serves the next request, which is
 * what a pooled client or a proxy with upstream keep-alive relies on. A larger body, or one of unknown length
 * (chunked), would cost reading an upload that nobody wants, so that answer closes, and says so first, since a
 * connection closed without notice fails the client's next request on it.
 *
 * @param headers - the request headers.
 * @param limit - the most bytes worth draining; default {@link DENIAL_DRAIN_LIMIT}.
 *
 * @example
 * ```ts
 * if (!req.complete && closesAfterDenial(req.headers)) res.setHeader('Connection', 'close');
 * ```
 */
export function closesAfterDenial(headers: HeaderSource, limit: number = DENIAL_DRAIN_LIMIT): boolean {
  if (readHeader(headers, 'transfer-encoding') !== undefined) return true;
  const length = readHeader(headers, 'content-length');
  // Not `> limit`: a value that is not a number must close too.
  return length !== undefined && !(Number(length) <= limit);
}
