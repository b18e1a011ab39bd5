import type { ServerResponse } from 'node:http';
import { STATUS_CODES } from 'node:http';
import type { Duplex } from 'node:stream';

/** An RFC 9457 problem the gateway itself answers with (not a rate-limit denial, which `sluice/http` formats). */
export interface GatewayProblem {
  readonly status: number;
  readonly title: string;
  readonly detail: string;
  /** A stable code for programs and logs, for example `upstream_unreachable`. */
  readonly code: string;
  /** The request field at fault, for a refused admin request (`pattern`, `quota`, ...). */
  readonly field?: string;
}

/** The problems of the gateway, by code: one place for their wording. */
export const Problems = Object.freeze({
  invalidCredentials: (detail: string): GatewayProblem => ({
    status: 401,
    title: 'Invalid Credentials',
    detail,
    code: 'invalid_credentials',
  }),
  tooLarge: (limit: number): GatewayProblem => ({
    status: 413,
    title: 'Content Too Large',
    detail: `The request body is larger than ${limit} bytes.`,
    code: 'body_too_large',
  }),
  bodyTimeout: (bodyTimeoutMs: number, bodyMinRate: number): GatewayProblem => ({
    status: 408,
    title: 'Request Timeout',
    detail:
      bodyMinRate > 0
        ? `The request body arrived slower than ${bodyMinRate} bytes per second after the first ${bodyTimeoutMs / 1000} s.`
        : `The request body did not arrive whole within ${bodyTimeoutMs / 1000} s.`,
    code: 'request_body_timeout',
  }),
  badGateway: (): GatewayProblem => ({
    status: 502,
    title: 'Bad Gateway',
    detail: 'The upstream service could not be reached.',
    code: 'upstream_unreachable',
  }),
  gatewayTimeout: (): GatewayProblem => ({
    status: 504,
    title: 'Gateway Timeout',
    detail: 'The upstream service did not answer in time.',
    code: 'upstream_timeout',
  }),
  upstreamQueueTimeout: (queueTimeoutMs: number): GatewayProblem => ({
    status: 503,
    title: 'Service Unavailable',
    detail: `No upstream connection became free within ${queueTimeoutMs / 1000} s.`,
    code: 'upstream_queue_timeout',
  }),
  tooManyRequestBodies: (maxBodiesPerClient: number): GatewayProblem => ({
    status: 429,
    title: 'Too Many Requests',
    detail: `This client is already sending ${maxBodiesPerClient} request ${maxBodiesPerClient === 1 ? 'body' : 'bodies'} to the upstream, the most it may send at once.`,
    code: 'too_many_request_bodies',
  }),
  storeUnavailable: (): GatewayProblem => ({
    status: 503,
    title: 'Service Unavailable',
    detail: 'The rate-limit store cannot answer and the failure mode is closed.',
    code: 'store_unavailable',
  }),
  shuttingDown: (): GatewayProblem => ({
    status: 503,
    title: 'Service Unavailable',
    detail: 'The gateway is shutting down and takes no new requests; retry, another instance will answer.',
    code: 'shutting_down',
  }),
  noUpstream: (): GatewayProblem => ({
    status: 502,
    title: 'Bad Gateway',
    detail: 'No upstream is configured.',
    code: 'no_upstream',
  }),
  badRequest: (detail: string): GatewayProblem => ({
    status: 400,
    title: 'Bad Request',
    detail,
    code: 'bad_request',
  }),
  badHost: (): GatewayProblem => ({
    status: 400,
    title: 'Bad Request',
    detail: 'The request must have exactly one Host header field with a valid host and optional port.',
    code: 'bad_host',
  }),
  invalidOverride: (field: string, detail: string): GatewayProblem => ({
    status: 400,
    title: 'Invalid Override',
    detail,
    code: 'invalid_override',
    field,
  }),
  overridesFull: (detail: string): GatewayProblem => ({
    status: 507,
    title: 'Insufficient Storage',
    detail,
    code: 'overrides_full',
  }),
  overridesUnavailable: (detail: string): GatewayProblem => ({
    status: 503,
    title: 'Service Unavailable',
    detail,
    code: 'overrides_unavailable',
  }),
});

/**
 * The JSON body of a gateway problem. The request id goes in `correlation_id`, the member `sluice/http` writes
 * in the 429 and 400 bodies, so a client reads one name whichever part of the gateway answered.
 *
 * @param instance - the request's path; a query string is cut off, as `sluice/http` does (it may hold secrets and
 *   says nothing about the problem), so a target answered before it is parsed can be given as sent.
 * @param requestId - the request id; `''` leaves the member out (an admin or decision API answer has none).
 * @param members - more members of the body (the route list of an admin `not_found`); they never replace a
 *   standard one.
 */
export function problemBody(
  p: GatewayProblem,
  instance: string,
  requestId = '',
  members?: Readonly<Record<string, unknown>>,
): string {
  const q = instance.indexOf('?');
  const body: Record<string, unknown> = {
    ...members,
    type: 'about:blank',
    title: p.title,
    status: p.status,
    detail: p.detail,
    instance: q < 0 ? instance : instance.slice(0, q),
    code: p.code,
  };
  if (p.field !== undefined) body.field = p.field;
  if (requestId !== '') body.correlation_id = requestId;
  return JSON.stringify(body);
}

/**
 * Answers a request with a problem and `Cache-Control: no-store`, unless a response has already started (then
 * the connection is cut, the only honest signal left).
 *
 * @param requestId - the request id; `''` for none (the admin listener's answers).
 * @param extra - more header fields (`Retry-After`, `WWW-Authenticate` of a 401, `Allow` of a 405).
 * @param members - more members of the body, as {@link problemBody} takes them.
 */
export function sendProblem(
  res: ServerResponse,
  p: GatewayProblem,
  instance: string,
  requestId: string,
  extra: Record<string, string | string[]> = {},
  members?: Readonly<Record<string, unknown>>,
): void {
  if (res.headersSent) {
    res.destroy();
    return;
  }
  const body = problemBody(p, instance, requestId, members);
  res.writeHead(p.status, {
    ...extra,
    'content-type': 'application/problem+json',
    'content-length': Buffer.byteLength(body),
    'cache-control': 'no-store',
  });
  res.end(body);
}

/** Writes a whole HTTP/1.1 response on a raw socket (an upgrade request that is refused) and closes it. */
export function writeRawResponse(
  socket: Duplex,
  status: number,
  headers: readonly (readonly [string, string])[],
  body: string,
): void {
  let head = `HTTP/1.1 ${status} ${STATUS_CODES[status] ?? ''}\r\n`;
  for (const [k, v] of headers) head += `${k}: ${v}\r\n`;
  head += `content-length: ${Buffer.byteLength(body)}\r\nconnection: close\r\n\r\n`;
  socket.end(head + body);
}
