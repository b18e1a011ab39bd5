import { escapeKeyPart, ipKey } from 'sluice/http';

/** Where a request's identity came from. */
export type IdentitySource = 'jwt' | 'apikey' | 'headers' | 'anonymous';

/** Who a request is, as far as limiting is concerned. */
export interface Identity {
  readonly source: IdentitySource;
  readonly tenant: string | undefined;
  readonly client: string | undefined;
  readonly user: string | undefined;
  /** The tier the identity names, if any (validated against the configured tiers by the caller). */
  readonly tier: string | undefined;
  /** The SHA-256 hex of an API key, for `apikey:<hash>`. */
  readonly apiKeyHash: string | undefined;
}

/**
 * The bucket key of an identity, in the contract's order: `tenant:client`, then `tenant:<tenant>:user:<user>`,
 * then `apikey:<hash>`, then `ip:<client ip>`.
 *
 * @param identity - the resolved identity.
 * Values are escaped (`:` and `%`) so that one tenant's values cannot forge another's key; an IPv6 client is
 * keyed by its /64.
 *
 * @param clientIp - the client address from trusted proxies only.
 */
export function identityKey(identity: Identity, clientIp: string | undefined): string {
  const { tenant, client, user } = identity;
  if (tenant !== undefined && client !== undefined)
    return `${escapeKeyPart(tenant)}:${escapeKeyPart(client)}`;
  if (tenant !== undefined && user !== undefined)
    return `tenant:${escapeKeyPart(tenant)}:user:${escapeKeyPart(user)}`;
  if (identity.apiKeyHash !== undefined) return `apikey:${identity.apiKeyHash}`;
  return ipKey(clientIp);
}

/** The identity of a request without credentials. */
export const ANONYMOUS: Identity = Object.freeze({
  source: 'anonymous',
  tenant: undefined,
  client: undefined,
  user: undefined,
  tier: undefined,
  apiKeyHash: undefined,
});
