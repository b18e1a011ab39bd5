import { deriveKey } from 'sluice/http';

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
 * The bucket key of an identity, as the gateway's admission makes it (`sluice/http`'s `caller` key kind):
 * `tenant:<tenant>:client:<client>`, then `tenant:<tenant>:user:<user>`, then `apikey:<hash of the key's hash>`,
 * then `ip:<client ip>`. Every key starts with its kind and values are escaped (`:` and `%`), so no identity can
 * take another's key: a tenant named `ip` is not an address. An IPv6 client is keyed by its /64.
 *
 * @param identity - the resolved identity.
 * @param clientIp - the client address from trusted proxies only.
 * @returns the key, without the configuration's `keys.prefix`.
 */
export function identityKey(identity: Identity, clientIp: string | undefined): string {
  // The gateway hands the library the key's hash as the API key, which the library hashes for the bucket key.
  const caller = {
    tenant: identity.tenant,
    client: identity.client,
    user: identity.user,
    apiKey: identity.apiKeyHash,
  };
  return deriveKey(
    'caller',
    { method: 'GET', path: '/', headers: {}, remoteAddress: undefined, identity: caller },
    clientIp,
  );
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
