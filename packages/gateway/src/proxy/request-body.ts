import type { IncomingHttpHeaders } from 'node:http';

/**
 * Whether a request has a body to forward: a `Content-Length` other than 0, or a `Transfer-Encoding` (HTTP/1.1
 * frames a request body by one of the two; without either there is none).
 *
 * @param headers - the request's headers.
 */
export function hasRequestBody(headers: IncomingHttpHeaders): boolean {
  return headers['content-length'] !== undefined
    ? headers['content-length'] !== '0'
    : headers['transfer-encoding'] !== undefined;
}
