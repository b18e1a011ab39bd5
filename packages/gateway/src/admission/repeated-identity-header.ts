import { problemBody } from './problem-response.js';

/** The refusal of a request whose identity header holds more than one value, as admission returns it. */
export interface RepeatedIdentityHeader {
  readonly kind: 'deny';
  readonly status: 400;
  readonly outcome: 'duplicate_identity_header';
  readonly headers: readonly (readonly [string, string])[];
  readonly body: string;
  readonly decision: undefined;
  readonly tier: undefined;
  readonly key: undefined;
}

/**
 * A 400 for a request from a trusted proxy whose identity header (`x-tenant-id`...) came more than once or as a
 * list: which value names the caller is a guess, and guessing wrong, or falling back to the address key, would let
 * a client that adds a second header pick its bucket or leave its tenant's blocks behind.
 *
 * @param name - the header, as configured.
 * @param path - the request target (the problem's `instance`, without its query).
 * @param requestIdHeader - the header carrying the request id.
 * @param requestId - the request id.
 */
export function repeatedIdentityHeader(
  name: string,
  path: string,
  requestIdHeader: string,
  requestId: string,
): RepeatedIdentityHeader {
  const body = problemBody(
    {
      status: 400,
      title: 'Bad Request',
      detail: `The identity header ${name} has more than one value; send it once, with one value.`,
      code: 'duplicate_identity_header',
    },
    path,
    requestId,
  );
  return {
    kind: 'deny',
    status: 400,
    outcome: 'duplicate_identity_header',
    headers: [
      ['content-type', 'application/problem+json'],
      ['cache-control', 'no-store'],
      ['x-content-type-options', 'nosniff'],
      [requestIdHeader, requestId],
    ],
    body,
    decision: undefined,
    tier: undefined,
    key: undefined,
  };
}
