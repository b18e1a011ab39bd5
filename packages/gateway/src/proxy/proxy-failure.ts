import { BodyTimeoutError } from './body-deadline.js';
import { BodyTooLargeError } from './body-limit.js';
import type { ClientBodiesError } from './client-bodies.js';
import type { QueueTimeoutError } from './connection-gate.js';

/** Why a request could not be proxied; the gateway turns it into a problem response. */
export type ProxyFailure =
  /** The upstream could not be reached (refused, reset, connect timeout): 502. */
  | { readonly kind: 'connect'; readonly error: Error }
  /** The upstream sent no response headers in time: 504. */
  | { readonly kind: 'timeout'; readonly error: Error }
  /** The request body exceeded the size limit: 413. */
  | { readonly kind: 'too_large'; readonly error: Error }
  /** The request body arrived slower than `server.bodyMinRate` after `server.bodyTimeout`: 408. */
  | { readonly kind: 'body_timeout'; readonly error: BodyTimeoutError }
  /** No upstream connection became free within `upstream.queueTimeout`; nothing was sent: 503. */
  | { readonly kind: 'queue_timeout'; readonly error: QueueTimeoutError }
  /** The client already streams `upstream.maxBodiesPerClient` bodies; nothing was sent: 429. */
  | { readonly kind: 'client_bodies'; readonly error: ClientBodiesError }
  /** The client went away; nothing to answer. */
  | { readonly kind: 'aborted'; readonly error: Error };

/** What became of a protocol upgrade passed upstream ({@link UpstreamProxy.upgrade}). */
export type UpgradeResult =
  /** The upstream switched protocols: the client has its 101 and the two connections are joined. */
  | { readonly kind: 'switched' }
  /**
   * The upstream answered without switching (401, 403, 426, a redirect): the client has that answer, headers and
   * body, and its connection closes after it. `status` is the upstream's.
   */
  | { readonly kind: 'answered'; readonly status: number }
  | ProxyFailure;

/**
 * The failure an upstream request ended with, from undici's error and the request's abort: the body's limit or
 * deadline when one aborted it, the client when it left, else a header timeout or a connection failure.
 */
export function classify(
  error: Error,
  signal: { readonly aborted: boolean; readonly reason: unknown },
): ProxyFailure {
  const reason = signal.aborted ? signal.reason : undefined;
  if (reason instanceof BodyTooLargeError || error instanceof BodyTooLargeError) {
    return { kind: 'too_large', error: reason instanceof Error ? reason : error };
  }
  if (reason instanceof BodyTimeoutError) return { kind: 'body_timeout', error: reason };
  if (error instanceof BodyTimeoutError) return { kind: 'body_timeout', error };
  if (signal.aborted) return { kind: 'aborted', error };
  const code = (error as { code?: string }).code;
  if (code === 'UND_ERR_HEADERS_TIMEOUT') return { kind: 'timeout', error };
  return { kind: 'connect', error };
}
