import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ipKey, sha256Base64Url } from 'sluice/http';
import { describe, expect, it } from 'vitest';
import { ApiKeyFile, hashApiKey } from './api-key-file.js';
import { type Identity, identityKey } from './identity.js';
import { tenantId } from './tenant-id.js';

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

describe('tenant ids', () => {
  it('are keyed in lower case from every source; client and user ids keep their case', () => {
    expect(tenantId('ACME')).toBe('acme');
    expect(tenantId('Müller')).toBe('müller');
    expect(tenantId(undefined)).toBeUndefined();
    const dir = mkdtempSync(join(tmpdir(), 'sluice-keys-'));
    try {
      const file = join(dir, 'keys.yaml');
      writeFileSync(file, `keys:\n  - { hash: ${hashApiKey('k1')}, tenant: Acme, client: Web, name: web }\n`);
      expect(new ApiKeyFile(file).identify('k1')).toMatchObject({ tenant: 'acme', client: 'Web' });
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
