import { escapeKeyPart } from 'sluice/http';
import type { Identity } from './identity.js';

/**
 * The principal of an identity, for classes keyed by `principal`: the actor behind the request. A user is the actor
 * when the credentials name one (a person acting through a client application still spends their own bucket);
 * otherwise the client (a service account), otherwise the API key. Tenants scope user and client ids, because two
 * tenants may use the same ids. Parts are escaped so that one tenant's values cannot forge another's principal.
 *
 * @param identity - the resolved identity.
 * @returns the principal, or `undefined` for an anonymous identity (the key then falls back to the client IP).
 *
 * @example
 * ```ts
 * principalOf({ ...ANONYMOUS, source: 'headers', tenant: 'acme', user: 'alice' }); // 'tenant:acme:user:alice'
 * ```
 */
export function principalOf(identity: Identity): string | undefined {
  const { tenant, client, user } = identity;
  const scoped = (kind: string, id: string) =>
    tenant === undefined
      ? `${kind}:${escapeKeyPart(id)}`
      : `tenant:${escapeKeyPart(tenant)}:${kind}:${escapeKeyPart(id)}`;
  if (user !== undefined) return scoped('user', user);
  if (client !== undefined) return scoped('client', client);
  if (identity.apiKeyHash !== undefined) return `apikey:${identity.apiKeyHash}`;
  return undefined;
}
