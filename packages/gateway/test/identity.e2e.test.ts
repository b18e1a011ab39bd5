import { writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { exportJWK, generateKeyPair, type JWK, SignJWT } from 'jose';
import { sha256Base64Url } from 'sluice/http';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { hashApiKey } from '../src/identity/api-key-file.js';
import {
  client,
  send,
  startGateway,
  startUpstream,
  statuses,
  type TestGateway,
  type TestUpstream,
  tempDir,
} from './support.js';

const tmp = tempDir();
const agent = client();
let upstream: TestUpstream;
let jwksServer: Server;
let jwksUrl: string;
let sign: (
  claims: Record<string, unknown>,
  opts?: { iss?: string; aud?: string; exp?: number | string | null },
) => Promise<string>;
let foreign: string;
let running: TestGateway | undefined;

const TIERS = `rateLimiting:
  defaultTier: free
  tiers:
    free: { requestsPerMinute: 60, requestsPerHour: 1000, burstLimit: 3 }
    enterprise: { requestsPerMinute: 1000, requestsPerHour: 50000, burstLimit: 200 }
    internal: { unlimited: true }
ratelimit:
  rl.public_auth: { per_minute: 6, burst: 3 }
`;

beforeAll(async () => {
  upstream = await startUpstream();
  const { publicKey, privateKey } = await generateKeyPair('ES256');
  const jwk: JWK = { ...(await exportJWK(publicKey)), kid: 'k1', alg: 'ES256', use: 'sig' };
  writeFileSync(join(tmp.dir, 'jwks.json'), JSON.stringify({ keys: [jwk] }));
  jwksServer = createServer((_req, res) => {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ keys: [jwk] }));
  });
  await new Promise<void>((r) => jwksServer.listen(0, '127.0.0.1', r));
  jwksUrl = `http://127.0.0.1:${(jwksServer.address() as AddressInfo).port}/jwks.json`;
  sign = (claims, o = {}) => {
    const jwt = new SignJWT(claims)
      .setProtectedHeader({ alg: 'ES256', kid: 'k1' })
      .setIssuer(o.iss ?? 'https://auth.test')
      .setAudience(o.aud ?? 'sluice-api')
      .setIssuedAt();
    // `exp: null` leaves the expiry out.
    return (o.exp === null ? jwt : jwt.setExpirationTime(o.exp ?? '10m')).sign(privateKey);
  };
  const other = await generateKeyPair('ES256');
  foreign = await new SignJWT({ tenant_id: 'acme', client_id: 'x' })
    .setProtectedHeader({ alg: 'ES256', kid: 'k1' })
    .setIssuer('https://auth.test')
    .setAudience('sluice-api')
    .setExpirationTime('10m')
    .sign(other.privateKey);
  writeFileSync(
    join(tmp.dir, 'keys.yaml'),
    `keys:
  - { hash: ${hashApiKey('key-plain')}, name: plain }
  - { hash: "sha256:${hashApiKey('key-acme')}", tenant: acme, client: billing, tier: enterprise }
  - { hash: ${hashApiKey('key-internal')}, tier: internal }
  - { hash: ${hashApiKey('ключ-ü-key')}, tenant: unicode, client: app, tier: enterprise }
`,
  );
});
afterAll(async () => {
  await upstream.close();
  await new Promise<void>((r) => jwksServer.close(() => r()));
  await agent.close();
  tmp.cleanup();
});
afterEach(async () => {
  await running?.gateway.close();
  running = undefined;
});

async function start(extra: string): Promise<string> {
  running = await startGateway(join(tmp.dir, 'gw.yaml'), {
    yaml: TIERS + extra,
    overrides: { upstream: upstream.url },
  });
  return running.gateway.url;
}

const remaining = async (key: string, policy: string) =>
  (await running!.gateway.inspect(key)).find((b) => b.policy === policy)?.remaining;

describe('JWT identity', () => {
  for (const source of ['file', 'url'] as const) {
    it(`verifies bearer tokens against a JWKS ${source} and keys them tenant:client, then tenant:user`, async () => {
      const base = await start(`identity:
  jwt:
    ${source === 'file' ? 'jwksFile: jwks.json' : `jwksUrl: "${jwksUrl}"`}
    issuer: https://auth.test
    audience: sluice-api
`);
      const tc = await sign({ tenant_id: 'acme', client_id: 'ci-bot', sub: 'u1', tier: 'enterprise' });
      const r = await send(agent, `${base}/x`, { headers: { authorization: `Bearer ${tc}` } });
      expect(r.status).toBe(200);
      expect(r.headers['x-ratelimit-policy']).toBe('enterprise');
      expect(await remaining('tenant:acme:client:ci-bot', 'enterprise')).toBe(199);
      const tu = await sign({ tenant_id: 'acme', sub: 'u:7' });
      expect(
        (await send(agent, `${base}/x`, { headers: { authorization: `Bearer ${tu}` } })).headers[
          'x-ratelimit-policy'
        ],
      ).toBe('free');
      // Values are escaped, so "u:7" cannot pose as another key shape.
      expect(await remaining('tenant:acme:user:u%3A7', 'free')).toBe(2);
      // A token with neither tenant nor client falls back to the client IP.
      const bare = await sign({ sub: 'nobody' });
      await send(agent, `${base}/x`, { headers: { authorization: `Bearer ${bare}` } });
      expect(await remaining('ip:127.0.0.1', 'free')).toBe(2);
      // The upstream still receives the credentials.
      expect(upstream.seen.at(-1)?.headers.authorization).toBe(`Bearer ${bare}`);
    });
  }

  it('rejects wrong issuer, audience, signature and expired tokens with 401 problems', async () => {
    const base = await start(`identity:
  jwt: { jwksFile: jwks.json, issuer: https://auth.test, audience: sluice-api }
`);
    const cases = [
      await sign({ tenant_id: 'a', client_id: 'b' }, { iss: 'https://evil.test' }),
      await sign({ tenant_id: 'a', client_id: 'b' }, { aud: 'other' }),
      foreign,
      'not-a-jwt',
    ];
    for (const token of cases) {
      await running!.gateway.resetKey('ip:127.0.0.1'); // each failure takes a public-auth token (burst 3)
      const r = await send(agent, `${base}/x`, { headers: { authorization: `Bearer ${token}` } });
      expect(r.status).toBe(401);
      expect(r.headers['www-authenticate']).toBe('Bearer error="invalid_token"');
      expect(r.json()).toMatchObject({ status: 401, code: 'invalid_credentials' });
    }
    expect(upstream.seen.some((s) => s.headers.authorization === `Bearer ${foreign}`)).toBe(false);
  });

  it('refuses a token without exp unless identity.jwt.requireExp is false', async () => {
    const forever = await sign({ tenant_id: 'acme', client_id: 'ci-bot' }, { exp: null });
    let base = await start(`identity:
  jwt: { jwksFile: jwks.json, issuer: https://auth.test, audience: sluice-api }
`);
    const refused = await send(agent, `${base}/x`, { headers: { authorization: `Bearer ${forever}` } });
    expect(refused.status).toBe(401);
    expect(refused.json()).toMatchObject({ status: 401, code: 'invalid_credentials' });
    await running?.gateway.close();
    base = await start(`identity:
  jwt: { jwksFile: jwks.json, issuer: https://auth.test, audience: sluice-api, requireExp: false }
`);
    const accepted = await send(agent, `${base}/x`, { headers: { authorization: `Bearer ${forever}` } });
    expect(accepted.status).toBe(200);
    expect(await remaining('tenant:acme:client:ci-bot', 'free')).toBe(2);
  });
});

describe('JWT identity claims', () => {
  // A verified token's tenant, client, user and tier claims become bucket keys like the identity headers of a
  // trusted proxy, so they pass the same checks, with the same answer: a value no id can hold is refused with 400,
  // never keyed as written nor read as no identity (the address key, outside its tenant's blocks).
  it('refuses a claim with a control character, empty, too long or not one string, like an identity header', async () => {
    const base = await start(`identity:
  jwt: { jwksFile: jwks.json, issuer: https://auth.test, audience: sluice-api }
`);
    const cases: [Record<string, unknown>, string][] = [
      [{ tenant_id: 'a\nb', client_id: 'c1' }, 'invalid_identity_header'],
      [{ tenant_id: 'acme\u202e', client_id: 'c1' }, 'invalid_identity_header'],
      [{ tenant_id: 'acme', client_id: 'c\u0085' }, 'invalid_identity_header'],
      [{ tenant_id: 'acme', sub: 'ali\tce' }, 'invalid_identity_header'],
      [{ tenant_id: 'acme', client_id: 'c1', tier: 'enter\u0000prise' }, 'invalid_identity_header'],
      [{ tenant_id: '', client_id: 'c1' }, 'invalid_identity_header'],
      [{ tenant_id: '  ', client_id: 'c1' }, 'invalid_identity_header'],
      [{ tenant_id: 'x'.repeat(257), client_id: 'c1' }, 'invalid_identity_header'],
      [{ tenant_id: { id: 'acme' }, client_id: 'c1' }, 'invalid_identity_header'],
      [{ tenant_id: true, client_id: 'c1' }, 'invalid_identity_header'],
      [{ tenant_id: ['a', 'b'], client_id: 'c1' }, 'duplicate_identity_header'],
      [{ tenant_id: ['acme'], client_id: 'c1' }, 'duplicate_identity_header'],
      [{ tenant_id: 'acme', client_id: [] }, 'duplicate_identity_header'],
    ];
    const before = running!.logs.lines.length;
    const forwarded = upstream.seen.length;
    for (const [claims, code] of cases) {
      const r = await send(agent, `${base}/x`, {
        headers: { authorization: `Bearer ${await sign(claims)}` },
      });
      expect([r.status, r.json().code], JSON.stringify(claims)).toEqual([400, code]);
      expect(r.json()).toMatchObject({ type: 'about:blank', title: 'Bad Request', status: 400 });
      expect(r.headers['www-authenticate']).toBeUndefined();
    }
    // Nothing reached the upstream, nothing was keyed by the address, and no public-auth token was taken: the
    // token itself verified.
    expect(upstream.seen.length).toBe(forwarded);
    expect(await remaining('ip:127.0.0.1', 'free')).toBe(3);
    expect(await remaining('ip:127.0.0.1', 'rl.public_auth')).toBe(3);
    const lines = running!.logs.lines.slice(before).filter((l) => l.msg === 'request');
    expect(lines.map((l) => [l.status, l.outcome])).toEqual(cases.map(([, code]) => [400, code]));
    expect(lines.map((l) => l.key)).not.toContain('ip:127.0.0.1');
  });

  it('reads claims an identity header could hold: spaces around trimmed, non-ASCII, numbers; null as absent', async () => {
    const base = await start(`identity:
  jwt: { jwksFile: jwks.json, issuer: https://auth.test, audience: sluice-api }
`);
    const ok = async (claims: Record<string, unknown>) =>
      (await send(agent, `${base}/x`, { headers: { authorization: `Bearer ${await sign(claims)}` } })).status;
    expect(await ok({ tenant_id: ' Müller ', client_id: 'web app' })).toBe(200);
    expect(await ok({ tenant_id: 42, client_id: 7 })).toBe(200);
    expect(await ok({ tenant_id: 'solo', client_id: null, sub: 'u1' })).toBe(200);
    const keys = running!.logs.lines.filter((l) => l.msg === 'request').map((l) => l.key);
    expect(keys).toEqual(['tenant:müller:client:web app', 'tenant:42:client:7', 'tenant:solo:user:u1']);
  });
});

describe('failed credentials', () => {
  it('count against the public-auth bucket of the client IP; once empty, credentials get 429 unverified', async () => {
    const base = await start(`identity:
  jwt: { jwksFile: jwks.json, issuer: https://auth.test, audience: sluice-api }
  apiKeys: { file: keys.yaml }
`);
    const expired = await sign(
      { tenant_id: 'acme', client_id: 'c' },
      { exp: Math.floor(Date.now() / 1000) - 3600 },
    );
    // An expired token is refused but does not count: a real client just refreshes it.
    for (let i = 0; i < 5; i++)
      expect(
        (await send(agent, `${base}/x`, { headers: { authorization: `Bearer ${expired}` } })).status,
      ).toBe(401);
    expect(await remaining('ip:127.0.0.1', 'rl.public_auth')).toBe(3);
    expect((await send(agent, `${base}/x`, { headers: { authorization: `Bearer ${foreign}` } })).status).toBe(
      401,
    );
    expect((await send(agent, `${base}/x`, { headers: { 'x-api-key': 'wrong-1' } })).status).toBe(401);
    expect((await send(agent, `${base}/x`, { headers: { 'x-api-key': 'wrong-2' } })).status).toBe(401);
    expect(await remaining('ip:127.0.0.1', 'rl.public_auth')).toBe(0);
    const valid = await sign({ tenant_id: 'acme', client_id: 'ci' });
    const r = await send(agent, `${base}/x`, { headers: { authorization: `Bearer ${valid}` } });
    expect(r.status).toBe(429);
    expect(r.json()).toMatchObject({ 'violated-policies': ['rl.public_auth'], retryAfter: 10 });
    expect((await send(agent, `${base}/x`, { headers: { 'x-api-key': 'key-acme' } })).status).toBe(429);
    // Requests without credentials are limited by their own buckets only.
    expect((await send(agent, `${base}/x`)).status).toBe(200);
    running!.clock.advance(10_000);
    expect((await send(agent, `${base}/x`, { headers: { authorization: `Bearer ${valid}` } })).status).toBe(
      200,
    );
  });
});

describe('API keys', () => {
  it('identifies hashed keys: apikey:<hash>, or tenant:client and tier from the entry; unlimited tier is exempt', async () => {
    const base = await start(`identity:
  apiKeys: { file: keys.yaml }
`);
    const plain = await send(agent, `${base}/x`, { headers: { 'x-api-key': 'key-plain' } });
    expect(plain.headers['x-ratelimit-policy']).toBe('free');
    expect(await remaining(`apikey:${sha256Base64Url(hashApiKey('key-plain'))}`, 'free')).toBe(2);
    await send(agent, `${base}/x`, { headers: { 'x-api-key': 'key-acme' } });
    expect(await remaining('tenant:acme:client:billing', 'enterprise')).toBe(199);
    const codes = await statuses(agent, `${base}/x`, 10, { 'x-api-key': 'key-internal' });
    expect(codes.every((c) => c === 200)).toBe(true);
    expect(
      (await send(agent, `${base}/x`, { headers: { 'x-api-key': 'key-internal' } })).headers.ratelimit,
    ).toBeUndefined();
  });

  it('identifies a key that is not ASCII, sent as UTF-8 bytes as `sluice hash-key` hashed it', async () => {
    const base = await start(`identity:
  apiKeys: { file: keys.yaml }
`);
    // A header's bytes as they go on the wire; Node.js reads header bytes as latin1.
    const utf8 = Buffer.from('ключ-ü-key', 'utf8').toString('latin1');
    const r = await send(agent, `${base}/x`, { headers: { 'x-api-key': utf8 } });
    expect(r.status).toBe(200);
    expect(await remaining('tenant:unicode:client:app', 'enterprise')).toBe(199);
  });
});

describe('identity headers', () => {
  const headers = { 'x-tenant-id': 'acme', 'x-client-id': 'portal', 'x-rate-limit-tier': 'enterprise' };

  it('are honoured from a trusted proxy and passed upstream, without their other spellings', async () => {
    const base = await start(`server: { trustedProxies: [loopback] }
identity:
  headers: {}
`);
    const r = await send(agent, `${base}/x`, {
      headers: {
        ...headers,
        'x-forwarded-for': '198.51.100.7',
        'x_client-id': 'other',
        'x.client.id': 'other',
      },
    });
    expect(r.headers['x-ratelimit-policy']).toBe('enterprise');
    expect(await remaining('tenant:acme:client:portal', 'enterprise')).toBe(199);
    expect(upstream.seen.at(-1)?.headers['x-tenant-id']).toBe('acme');
    expect(upstream.seen.at(-1)?.headers['x-client-id']).toBe('portal');
    expect(upstream.seen.at(-1)?.headers['x_client-id']).toBeUndefined();
    expect(upstream.seen.at(-1)?.headers['x.client.id']).toBeUndefined();
    // Without identity headers, the forwarded client IP is the key.
    await send(agent, `${base}/x`, { headers: { 'x-forwarded-for': '198.51.100.7' } });
    expect(await remaining('ip:198.51.100.7', 'free')).toBe(2);
  });

  it('are ignored and stripped from an untrusted peer, which is keyed by its own address', async () => {
    const base = await start(`identity:
  headers: {}
`);
    // The other spellings too, whole or mixed: CGI-style servers (PHP, WSGI) read x_tenant_id and X-Tenant_Id as
    // HTTP_X_TENANT_ID, and lighttpd and older Apache map a dot or any other character to `_` as well.
    const lookAlike = {
      x_tenant_id: 'acme',
      'x-client_id': 'portal',
      'x_rate-limit_tier': 'enterprise',
      'x.user.id': 'root',
      'x-tenant~id': 'other',
    };
    const r = await send(agent, `${base}/x`, {
      headers: { ...headers, ...lookAlike, 'x-forwarded-for': '198.51.100.7' },
    });
    expect(r.headers['x-ratelimit-policy']).toBe('free');
    expect(await remaining('ip:127.0.0.1', 'free')).toBe(2);
    expect(await remaining('tenant:acme:client:portal', 'enterprise')).toBe(200);
    const seen = upstream.seen.at(-1)?.headers ?? {};
    for (const name of [...Object.keys(headers), ...Object.keys(lookAlike)])
      expect(seen[name], name).toBeUndefined();
  });
});
