import type { IncomingHttpHeaders } from 'node:http';
import type { HttpRequestInfo, IdentifyResult, Identity } from 'sluice/http';
import { isPromiseLike } from 'sluice/http';
import type {
  IdentifyResult as GatewayIdentifyResult,
  RequestIdentifier,
} from '../identity/identify-request.js';
import type { Identity as CallerIdentity } from '../identity/identity.js';
import { type InvalidClaim, MAX_IDENTITY_LENGTH } from '../identity/identity-value.js';
import { principalOf } from '../identity/principal.js';
import { tenantId } from '../identity/tenant-id.js';

/** A request as the gateway admits it: the library's request facts plus what only the gateway knows. */
export interface GatewayRequest extends HttpRequestInfo {
  /** The request's headers (credentials, identity headers), as Node parses them. */
  readonly headers: IncomingHttpHeaders;
  /** Whether `identity.headers` are believed for this request (the direct peer is a trusted proxy). */
  readonly trustIdentityHeaders: boolean;
}

const INVALID_TOKEN = Object.freeze([
  Object.freeze(['WWW-Authenticate', 'Bearer error="invalid_token"'] as const),
]);

/**
 * The gateway's identity sources as `sluice/http`'s `identify` hook: a bearer JWT, an API key, identity headers
 * from a trusted proxy, else anonymous; the tier resolved against the configured tiers (the default tier when
 * none or an unknown one is named). The hook answers in the same tick unless a JWT must be verified, and the
 * anonymous caller is one frozen identity shared by every request.
 *
 * @param identifier - the configuration's identity sources.
 * @param isTier - whether a tier of that name is configured.
 * @param defaultTier - `rateLimiting.defaultTier`.
 * @param recorded - an identity already known for a request (`sluice replay` reads it from an access log line);
 *   when it answers, the identity sources are not consulted and the identity goes through the same tier and
 *   principal resolution. The gateway passes none.
 * @returns the hook.
 */
export function callerIdentifier(
  identifier: RequestIdentifier,
  isTier: (name: string) => boolean,
  defaultTier: string,
  recorded?: (r: GatewayRequest) => CallerIdentity | undefined,
): (r: GatewayRequest) => IdentifyResult | Promise<IdentifyResult> {
  const anonymous: Identity = Object.freeze({ tier: defaultTier });
  const toLibrary = (result: GatewayIdentifyResult): IdentifyResult => {
    if (!result.ok) {
      if (result.invalid !== undefined) return claimRefusal(result.invalid);
      const jwt = result.source === 'jwt';
      return {
        failed: true,
        reason: result.reason,
        counts: result.counts,
        detail: jwt ? 'The bearer token is not valid.' : 'The API key is not valid.',
        ...(jwt ? { headers: INVALID_TOKEN } : {}),
      };
    }
    const id = result.identity;
    if (id.source === 'anonymous') return anonymous;
    const principal = principalOf(id);
    return {
      tier: id.tier !== undefined && isTier(id.tier) ? id.tier : defaultTier,
      ...(principal === undefined ? {} : { principal }),
      ...(id.tenant === undefined ? {} : { tenant: id.tenant }),
      ...(id.client === undefined ? {} : { client: id.client }),
      ...(id.user === undefined ? {} : { user: id.user }),
      // Only the hash of an API key is known here; the library hashes it once more for the bucket key.
      ...(id.apiKeyHash === undefined ? {} : { apiKey: id.apiKeyHash }),
    };
  };
  const fromSources = (r: GatewayRequest): IdentifyResult | Promise<IdentifyResult> => {
    const result = identifier.identify(r.headers, identifier.credentials(r.headers), r.trustIdentityHeaders);
    return isPromiseLike(result) ? result.then(toLibrary) : toLibrary(result);
  };
  // The gateway's own requests never carry a recorded identity: its hook does not ask for one.
  if (recorded === undefined) return fromSources;
  return (r) => {
    const known = recorded(r);
    if (known === undefined) return fromSources(r);
    // A recorded tenant is keyed as the sources key it: in lower case (see tenantId).
    const identity = known.tenant === undefined ? known : { ...known, tenant: tenantId(known.tenant) };
    return toLibrary({ ok: true, identity });
  };
}

/**
 * A verified token whose identity claim no id can hold, answered as the identity header holding such a value is:
 * 400 `duplicate_identity_header` for a list, `invalid_identity_header` otherwise, taking no public-auth token
 * (the token verified) and keying nothing.
 */
function claimRefusal(invalid: InvalidClaim): IdentifyResult {
  const what = `The identity claim ${invalid.claim} of the bearer token`;
  const detail =
    invalid.fault === 'list'
      ? `${what} holds a list; issue one id, as a string.`
      : invalid.fault === 'too_long'
        ? `${what} is longer than ${MAX_IDENTITY_LENGTH} bytes; issue an id of at most ${MAX_IDENTITY_LENGTH}.`
        : invalid.fault === 'empty'
          ? `${what} is empty; leave the claim out or issue an id.`
          : invalid.fault === 'control'
            ? `${what} holds a control character; issue an id of printable characters.`
            : `${what} is not a string; issue one id, as a string.`;
  return {
    failed: true,
    reason: 'invalid_identity_claim',
    counts: false,
    detail,
    refusal: {
      status: 400,
      code: invalid.fault === 'list' ? 'duplicate_identity_header' : 'invalid_identity_header',
    },
  };
}
