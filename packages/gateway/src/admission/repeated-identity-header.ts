import { type InvalidIdentityValue, MAX_IDENTITY_LENGTH } from '../identity/identify-request.js';
import { problemBody } from './problem-response.js';

/** The refusal of a request whose identity header cannot name one caller, as admission returns it. */
export interface RepeatedIdentityHeader {
  readonly kind: 'deny';
  readonly status: 400;
  readonly outcome: 'duplicate_identity_header' | 'invalid_identity_header';
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
  return refusal(
    'duplicate_identity_header',
    `The identity header ${name} has more than one value; send it once, with one value.`,
    path,
    requestIdHeader,
    requestId,
  );
}

/**
 * A 400 for a request from a trusted proxy whose identity header holds a control character (a tab, DEL, a C1
 * control as a byte or in UTF-8, a bidirectional control) or more than 256 characters: no id holds one, and
 * reading the request as having no such header would key it by the address, out of its tenant's blocks, as a
 * repeated header would.
 *
 * @param invalid - the header, as configured, and what is wrong with its value.
 * @param path - the request target (the problem's `instance`, without its query).
 * @param requestIdHeader - the header carrying the request id.
 * @param requestId - the request id.
 */
export function invalidIdentityHeader(
  invalid: InvalidIdentityValue,
  path: string,
  requestIdHeader: string,
  requestId: string,
): RepeatedIdentityHeader {
  const detail =
    invalid.fault === 'too_long'
      ? `The identity header ${invalid.name} is longer than ${MAX_IDENTITY_LENGTH} characters; send an id of at most ${MAX_IDENTITY_LENGTH}.`
      : `The identity header ${invalid.name} holds a control character; send an id of printable characters (UTF-8 for non-ASCII ones).`;
  return refusal('invalid_identity_header', detail, path, requestIdHeader, requestId);
}

function refusal(
  code: RepeatedIdentityHeader['outcome'],
  detail: string,
  path: string,
  requestIdHeader: string,
  requestId: string,
): RepeatedIdentityHeader {
  const body = problemBody({ status: 400, title: 'Bad Request', detail, code }, path, requestId);
  return {
    kind: 'deny',
    status: 400,
    outcome: code,
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
