import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  client,
  rawStatus,
  send,
  startGateway,
  startUpstream,
  type TestGateway,
  type TestUpstream,
  tempDir,
} from './support.js';

// Identity headers set by a trusted proxy may hold a space or a non-ASCII character (a client named `web app`, a
// tenant `Müller` sent as UTF-8 bytes). Such a request is keyed by its identity, so the escaped rule an operator
// writes (`tenant:acme:client:web%20app`, `tenant:m%C3%BCller`) holds; it never falls back to the proxy's address,
// whose bucket (and penalty block) every caller behind that proxy shares.
const tmp = tempDir();
const agent = client();
const TOKEN = 'admin-token-0123456789';
let upstream: TestUpstream;
let g: TestGateway;

const yaml = `server: { trustedProxies: [loopback] }
identity:
  headers: {}
rateLimiting:
  defaultTier: free
  tiers:
    free: { requestsPerMinute: 60, burstLimit: 2 }
admin:
  port: 0
  token: \${ADMIN_TOKEN}
`;

beforeAll(async () => {
  upstream = await startUpstream();
  g = await startGateway(join(tmp.dir, 'identity-values.yaml'), {
    yaml,
    env: { ADMIN_TOKEN: TOKEN },
    overrides: { upstream: upstream.url },
  });
});
afterAll(async () => {
  await g.gateway.close();
  await upstream.close();
  await agent.close();
  tmp.cleanup();
});

const block = async (pattern: string) => {
  const r = await send(agent, `${g.gateway.adminUrl}/overrides`, {
    method: 'PUT',
    headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' },
    body: JSON.stringify({ pattern, block: 403, ttlSeconds: 3600, reason: 'tryout' }),
  });
  expect(r.status).toBe(200);
};

const port = () => Number(new URL(g.gateway.url).port);
const get = (headers: [string, string][]) => rawStatus(port(), 'GET', '/items', headers);
const keysLogged = () => g.logs.lines.filter((l) => l.msg === 'request').map((l) => l.key);

describe('identity header values with a space or a non-ASCII character', () => {
  it('key the request by the identity, in UTF-8, so that an escaped block holds', async () => {
    await block('tenant:acme:client:web%20app');
    await block('tenant:m%C3%BCller:client:web');
    expect(
      await get([
        ['x-tenant-id', 'acme'],
        ['x-client-id', 'web app'],
      ]),
    ).toBe(403);
    expect(
      await get([
        ['x-tenant-id', 'MÜLLER'],
        ['x-client-id', 'web'],
      ]),
    ).toBe(403);
    expect(
      await get([
        ['x-tenant-id', 'müller'],
        ['x-client-id', 'web'],
      ]),
    ).toBe(403);
    // Other callers behind the same proxy keep their own buckets: never the proxy's address.
    expect(
      await get([
        ['x-tenant-id', 'acme'],
        ['x-client-id', 'café'],
      ]),
    ).toBe(200);
    expect(keysLogged()).toContain('tenant:acme:client:café');
    expect(keysLogged()).not.toContain('ip:127.0.0.1');

    // A control character (here U+202E, which turns printed text around) is never part of an id.
    await get([
      ['x-tenant-id', 'acme'],
      ['x-client-id', 'web\u202eppa'],
    ]);
    expect(keysLogged().some((k) => String(k).includes('\u202e'))).toBe(false);
  });

  it('refuse a value with a control character with 400 invalid_identity_header, logged as such', async () => {
    const before = g.logs.lines.length;
    // A tab inside the value (Node.js keeps it; only those around it are the field's), U+0085 and U+202E in UTF-8.
    for (const value of ['ac\tme', 'acme\u0085', 'acme\u202e']) {
      expect(await get([['x-tenant-id', value]]), JSON.stringify(value)).toBe(400);
    }
    const lines = g.logs.lines.slice(before).filter((l) => l.msg === 'request');
    expect(lines.map((l) => [l.status, l.outcome])).toEqual(
      Array.from({ length: 3 }, () => [400, 'invalid_identity_header']),
    );
    expect(lines.map((l) => l.key)).not.toContain('ip:127.0.0.1');
  });
});
