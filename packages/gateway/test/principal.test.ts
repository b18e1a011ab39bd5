import { describe, expect, it } from 'vitest';
import { ANONYMOUS } from '../src/identity/identity.js';
import { principalOf } from '../src/identity/principal.js';

describe('the principal of a gateway identity', () => {
  const id = (fields: Record<string, string>) => ({ ...ANONYMOUS, source: 'headers' as const, ...fields });

  it('is the user, else the client, else the API key hash, scoped by the tenant', () => {
    expect(principalOf(id({ tenant: 'acme', client: 'web', user: 'alice' }))).toBe('tenant:acme:user:alice');
    expect(principalOf(id({ user: 'alice' }))).toBe('user:alice');
    expect(principalOf(id({ tenant: 'acme', client: 'web' }))).toBe('tenant:acme:client:web');
    expect(principalOf(id({ client: 'web' }))).toBe('client:web');
    expect(principalOf(id({ apiKeyHash: 'abc' }))).toBe('apikey:abc');
    expect(principalOf(ANONYMOUS)).toBeUndefined();
  });

  it('cannot be forged across tenants by a separator in a value', () => {
    expect(principalOf(id({ tenant: 'a:user:b', user: 'c' }))).not.toBe(
      principalOf(id({ tenant: 'a', user: 'b:user:c' })),
    );
  });
});
