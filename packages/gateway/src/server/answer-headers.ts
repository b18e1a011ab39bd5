import type { IncomingMessage, OutgoingHttpHeaders } from 'node:http';
import { type HeaderPair, PROBLEM_CONTENT_TYPE } from 'sluice/http';
import type { Admission } from '../admission/admit-request.js';
import type { Runtime } from '../admission/runtime.js';
import { type ExtraFields, setField } from '../proxy/extra-fields.js';
import { upstreamRequestHeaders } from '../proxy/forward-headers.js';

/** An admission that lets the request through (allowed or exempt). */
export type Admitted = Exclude<Admission, { readonly kind: 'deny' }>;

const NO_PAIRS: readonly HeaderPair[] = Object.freeze([]);

/*
 * The headers of every answer of the proxy listener, written in one place for plain requests and upgrades alike:
 * what goes upstream, what the gateway adds to a proxied answer, and the head of a problem it answers itself.
 */

/**
 * The headers the gateway adds to a proxied answer (a response or a `101 Switching Protocols`): the request id,
 * and the rate-limit headers of an allowed request (an exempt one has none), as a flat list of names and values
 * that the response's head takes as it is. A name given twice keeps its first place and its last value, as the
 * header object this list replaced did.
 */
export function admittedHeaders(rt: Runtime, id: string, admission: Admitted): ExtraFields {
  const extra: ExtraFields = [rt.config.server.requestIdHeader, id];
  if (admission.kind !== 'allow') return extra;
  // By index: `for...of` with a destructured pair made an iterator and its results per request (about 500 bytes).
  const pairs = admission.headers;
  for (let i = 0; i < pairs.length; i++) {
    const pair = pairs[i] as HeaderPair;
    setField(extra, pair[0], pair[1]);
  }
  return extra;
}

/**
 * The request headers sent upstream, with the forwarding headers of this client connection. `clientIp` is the
 * address the request was admitted with (`Runtime.clientIp`), which `X-Real-IP` carries behind a trusted proxy.
 */
export function upstreamHeaders(
  rt: Runtime,
  req: IncomingMessage,
  id: string,
  clientIp: string | undefined,
): OutgoingHttpHeaders {
  const peer = req.socket.remoteAddress ?? 'unknown';
  const trusted = rt.trustedPeer(req.socket.remoteAddress);
  return upstreamRequestHeaders(req.headers, {
    peer: peer.startsWith('::ffff:') ? peer.slice(7) : peer,
    // X-Real-IP is the address the request was keyed by; from an untrusted peer that is the peer itself.
    client: trusted ? clientIp : undefined,
    proto: (req.socket as { encrypted?: boolean }).encrypted === true ? 'https' : 'http',
    host: req.headers.host,
    requestId: id,
    requestIdHeader: rt.config.server.requestIdHeader,
    // Identity headers are believed only from trusted proxies; from anyone else they never reach the upstream, and
    // their other spellings (`_` for `-`) reach it from nobody.
    strip: trusted ? rt.identifier.stripsFromTrusted : rt.identifier.stripsFromUntrusted,
    trustedPeer: trusted,
    preserveHost: rt.config.upstream.preserveHost,
  });
}

/**
 * The head of a problem the gateway answers itself (a denial, a bad target, an upstream failure): the headers
 * admission gave (rate-limit headers, `Retry-After`), the problem's content type, no caching, and the request id.
 */
export function problemHeaders(
  rt: Runtime,
  id: string,
  given: readonly HeaderPair[] = NO_PAIRS,
): HeaderPair[] {
  return [
    ...given,
    ['content-type', PROBLEM_CONTENT_TYPE],
    ['cache-control', 'no-store'],
    [rt.config.server.requestIdHeader, id],
  ];
}
