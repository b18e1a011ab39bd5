import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { type AdmissionRequest, admitRequest } from '../src/admission/admit-request.js';
import { hashApiKey } from '../src/identity/api-key-file.js';
import { startGateway, type TestGateway, tempDir } from './support.js';

const tmp = tempDir();
let running: TestGateway | undefined;

afterEach(async () => {
  await running?.gateway.close();
  running = undefined;
});
afterAll(() => tmp.cleanup());

const YAML = `rateLimiting:
  defaultTier: free
  tiers:
    free: { requestsPerMinute: 60, burstLimit: 20 }
identity:
  headers: {}
`;

function request(headers: Record<string, string | string[]>, trusted = true): AdmissionRequest {
  return {
    method: 'GET',
    path: '/api/items',
    headers: headers as AdmissionRequest['headers'],
    clientIp: '203.0.113.7',
    trustIdentityHeaders: trusted,
    cost: 1,
    correlationId: 'req-1',
  };
}

async function admit(headers: Record<string, string | string[]>, trusted = true) {
  return await admitRequest(running!.gateway, request(headers, trusted));
}

/** Admits `headers` from a trusted proxy: the 400 problem `code` naming the header `name`; its body. */
async function refused(code: string, name: string, headers: Record<string, string | string[]>) {
  const a = await admit(headers);
  expect(a).toMatchObject({ kind: 'deny', status: 400, outcome: code });
  if (a.kind !== 'deny') throw new Error(`${name} was not refused`);
  const body = JSON.parse(a.body) as Record<string, unknown>;
  expect(body).toMatchObject({ status: 400, code, correlation_id: 'req-1' });
  expect(String(body.detail)).toContain(name);
  expect(a.headers).toContainEqual(['content-type', 'application/problem+json']);
  return { admission: a, body };
}

describe('identity headers with more than one value', () => {
  // Node.js joins repeated field lines of one name with ", "; a proxy may fold them so too (RFC 9110 5.3).
  it.each([
    ['x-tenant-id', { 'x-tenant-id': 'acme, evil', 'x-client-id': 'web' }],
    ['x-tenant-id', { 'x-tenant-id': 'acme,acme', 'x-client-id': 'web' }],
    ['x-client-id', { 'x-tenant-id': 'acme', 'x-client-id': ['web', 'cli'] }],
    ['x-user-id', { 'x-tenant-id': 'acme', 'x-user-id': 'u1, u2' }],
    ['x-rate-limit-tier', { 'x-rate-limit-tier': 'free, enterprise' }],
  ])('are refused with 400 naming %s, never keyed by the address', async (name, headers) => {
    running = await startGateway(join(tmp.dir, 'dup.yaml'), { yaml: YAML });
    await refused('duplicate_identity_header', name, headers);
  });

  it('are ignored, like every identity header, from a peer that is not a trusted proxy', async () => {
    running = await startGateway(join(tmp.dir, 'untrusted.yaml'), { yaml: YAML });
    expect(await admit({ 'x-tenant-id': 'acme, evil' }, false)).toMatchObject({
      kind: 'allow',
      key: 'ip:203.0.113.7',
    });
  });
});

describe('identity headers holding a control character', () => {
  // Node.js gives header bytes one character each (latin1): obs-text bytes it accepts can be a C1 control on
  // their own (0x85) or the UTF-8 form of one (0xC2 0x85 is U+0085, 0xE2 0x80 0xAE is U+202E).
  it.each([
    ['x-tenant-id', { 'x-tenant-id': 'ac\tme', 'x-client-id': 'web' }],
    ['x-client-id', { 'x-tenant-id': 'acme', 'x-client-id': 'we\x7fb' }],
    ['x-client-id', { 'x-tenant-id': 'acme', 'x-client-id': 'web\x85' }],
    ['x-user-id', { 'x-tenant-id': 'acme', 'x-user-id': 'u\xc2\x851' }],
    ['x-tenant-id', { 'x-tenant-id': 'acme\xe2\x80\xae', 'x-client-id': 'web' }],
    ['x-rate-limit-tier', { 'x-rate-limit-tier': '\x1b[31mfree' }],
  ])('are refused with 400 naming %s, never keyed by the address', async (name, headers) => {
    running = await startGateway(join(tmp.dir, 'control.yaml'), { yaml: YAML });
    const { admission } = await refused('invalid_identity_header', name, headers);
    expect(admission.key).toBeUndefined();
  });

  it('are ignored from an untrusted peer; spaces and UTF-8 letters are still read', async () => {
    running = await startGateway(join(tmp.dir, 'control-ok.yaml'), { yaml: YAML });
    expect(await admit({ 'x-tenant-id': 'ac\tme' }, false)).toMatchObject({
      kind: 'allow',
      key: 'ip:203.0.113.7',
    });
    expect(await admit({ 'x-tenant-id': 'M\xc3\xbcller', 'x-client-id': 'web app' })).toMatchObject({
      kind: 'allow',
      key: 'tenant:m\u00fcller:client:web app',
    });
  });
});

describe('tenant ids in any case', () => {
  it('key ACME, Acme and acme from identity headers as one tenant, so a block of tenant:acme holds', async () => {
    running = await startGateway(join(tmp.dir, 'case.yaml'), { yaml: YAML });
    await running.gateway.overrides.set({ pattern: 'tenant:acme', block: 403, reason: 'abuse' }, 'ops');
    for (const tenant of ['acme', 'ACME', 'Acme']) {
      const a = await admit({ 'x-tenant-id': tenant, 'x-client-id': 'web' });
      expect(a, tenant).toMatchObject({ kind: 'deny', status: 403, key: 'tenant:acme:client:web' });
    }
    // Client and user ids keep their case: they are the identity provider's, often case-sensitive.
    await running.gateway.overrides.remove('tenant:acme', 'ops', 'done');
    expect(await admit({ 'x-tenant-id': 'ACME', 'x-client-id': 'Web' })).toMatchObject({
      kind: 'allow',
      key: 'tenant:acme:client:Web',
    });
  });
});

describe('a rule on a whole tenant', () => {
  it('holds against every request of the tenant: a tenant alone (keyed by address) and an API key of it', async () => {
    writeFileSync(
      join(tmp.dir, 'tenant-keys.yaml'),
      `keys:\n  - { hash: ${hashApiKey('key-acme')}, tenant: acme }\n  - { hash: ${hashApiKey('key-beta')}, tenant: beta }\n`,
    );
    running = await startGateway(join(tmp.dir, 'tenant-wide.yaml'), {
      yaml: `${YAML}  apiKeys: { file: tenant-keys.yaml }\n`,
    });
    const onlyTenant = { 'x-tenant-id': 'ACME' };
    expect(await admit(onlyTenant)).toMatchObject({ kind: 'allow', key: 'ip:203.0.113.7' });
    const apiKey = await admit({ 'x-api-key': 'key-acme' });
    expect(apiKey).toMatchObject({ kind: 'allow', key: expect.stringMatching(/^apikey:/) });
    for (const pattern of ['tenant:acme', 'tenant:acme:*']) {
      await running.gateway.overrides.set({ pattern, block: 403, reason: 'abuse' }, 'ops');
      const callers: Record<string, string>[] = [
        onlyTenant,
        { 'x-api-key': 'key-acme' },
        { 'x-tenant-id': 'acme', 'x-user-id': 'u' },
      ];
      for (const headers of callers) {
        expect(await admit(headers), `${pattern} ${JSON.stringify(headers)}`).toMatchObject({
          kind: 'deny',
          status: 403,
          outcome: 'blocked',
        });
      }
      // Another tenant, at the same address or with its own API key, is not blocked.
      expect(await admit({ 'x-tenant-id': 'beta' })).toMatchObject({ kind: 'allow' });
      expect(await admit({ 'x-api-key': 'key-beta' })).toMatchObject({ kind: 'allow' });
      await running.gateway.overrides.remove(pattern, 'ops', 'done');
    }
    // A limit on the tenant gives its requests the rule's bucket, as it does to its client and user keys.
    await running.gateway.overrides.set(
      { pattern: 'tenant:acme', quota: 6000, window: 60, reason: 'launch' },
      'ops',
    );
    const limited = await admit(onlyTenant);
    const policy =
      limited.kind === 'allow' ? limited.headers.find(([n]) => n === 'RateLimit-Policy') : undefined;
    expect(policy?.[1]).toContain('q=6000');
  });
});

const at256 = 'c'.repeat(256);
const at257 = 'c'.repeat(257);

describe('identity header values longer than 256 characters', () => {
  it.each([
    ['x-client-id', { 'x-tenant-id': 'beta', 'x-client-id': at257 }],
    ['x-tenant-id', { 'x-tenant-id': 't'.repeat(257), 'x-client-id': 'web' }],
    ['x-user-id', { 'x-tenant-id': 'beta', 'x-user-id': `  ${at257}  ` }],
    ['x-rate-limit-tier', { 'x-rate-limit-tier': at257 }],
  ])('are refused with 400 invalid_identity_header naming %s and the limit', async (name, headers) => {
    running = await startGateway(join(tmp.dir, 'long.yaml'), { yaml: YAML });
    const { admission, body } = await refused('invalid_identity_header', name, headers);
    expect(admission.key).toBeUndefined();
    expect(String(body.detail)).toContain('256');
  });

  it('hold a block of the client prefix at 256 characters, and are ignored from an untrusted peer', async () => {
    running = await startGateway(join(tmp.dir, 'long-ok.yaml'), { yaml: YAML });
    await running.gateway.overrides.set(
      { pattern: 'tenant:beta:client:*', block: 403, reason: 'abuse' },
      'ops',
    );
    expect(
      await admitRequest(running.gateway, request({ 'x-tenant-id': 'beta', 'x-client-id': at256 })),
    ).toMatchObject({ kind: 'deny', status: 403, outcome: 'blocked' });
    expect(
      await admitRequest(running.gateway, request({ 'x-tenant-id': 'beta', 'x-client-id': at257 }, false)),
    ).toMatchObject({ kind: 'allow', key: 'ip:203.0.113.7' });
  });
});
