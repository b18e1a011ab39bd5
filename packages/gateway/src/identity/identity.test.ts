import { ipKey, sha256Base64Url } from 'sluice/http';
import { describe, expect, it } from 'vitest';
import { type Identity, identityKey } from './identity.js';

const id = (o: Partial<Identity>): Identity => ({
  source: 'headers',
  tenant: undefined,
  client: undefined,
  user: undefined,
  tier: undefined,
  apiKeyHash: undefined,
  ...o,
});

describe('identityKey', () => {
  it('gives the keys the gateway limits by, each starting with its kind', () => {
    expect(identityKey(id({ tenant: 'acme', client: 'web' }), '192.0.2.1')).toBe('tenant:acme:client:web');
    expect(identityKey(id({ tenant: 'acme', user: 'u1' }), '192.0.2.1')).toBe('tenant:acme:user:u1');
    // The gateway hands the library the key's hash, which hashes it once more for the bucket key.
    expect(identityKey(id({ apiKeyHash: 'ab12' }), '192.0.2.1')).toBe(`apikey:${sha256Base64Url('ab12')}`);
    expect(identityKey(id({}), '192.0.2.1')).toBe(ipKey('192.0.2.1'));
  });

  it('never gives a caller the key of another kind (a tenant named ip is not an address)', () => {
    const spoof = identityKey(id({ tenant: 'ip', client: '203.0.113.9' }), '198.51.100.1');
    expect(spoof).not.toBe(ipKey('203.0.113.9'));
    expect(identityKey(id({ tenant: 'a:b', client: 'c' }), undefined)).not.toBe(
      identityKey(id({ tenant: 'a', client: 'b:c' }), undefined),
    );
  });
});
