import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { exportJWK, generateKeyPair } from 'jose';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { type AdmissionRequest, admitRequest } from '../src/admission/admit-request.js';
import { startGateway, type TestGateway, tempDir } from './support.js';

const tmp = tempDir();
let running: TestGateway | undefined;

afterEach(async () => {
  await running?.gateway.close();
  running = undefined;
});
afterAll(() => tmp.cleanup());

const TIERS = `rateLimiting:
  defaultTier: free
  tiers:
    free: { requestsPerMinute: 60, burstLimit: 2 }
`;

function request(headers: Record<string, string> = {}): AdmissionRequest {
  return {
    method: 'GET',
    path: '/api/items',
    headers,
    clientIp: '203.0.113.7',
    trustIdentityHeaders: false,
    cost: 1,
    correlationId: 'req-1',
  };
}

function isThenable(v: unknown): boolean {
  return typeof (v as { then?: unknown } | null)?.then === 'function';
}

describe('admission on the memory store', () => {
  it('answers in the same tick when nothing needs a promise, allowing and then denying', async () => {
    running = await startGateway(join(tmp.dir, 'sync.yaml'), { yaml: TIERS });
    const first = admitRequest(running.gateway, request());
    expect(isThenable(first)).toBe(false);
    expect(first).toMatchObject({ kind: 'allow', outcome: 'allowed', key: 'ip:203.0.113.7', tier: 'free' });
    expect(isThenable(admitRequest(running.gateway, request()))).toBe(false);
    const third = admitRequest(running.gateway, request());
    expect(isThenable(third)).toBe(false);
    expect(third).toMatchObject({ kind: 'deny', status: 429, outcome: 'limited' });
  });

  it('returns a promise when a JWT must be verified, with the same answer as before', async () => {
    const { publicKey } = await generateKeyPair('RS256');
    const jwk = { ...(await exportJWK(publicKey)), kid: 'k1', alg: 'RS256', use: 'sig' };
    writeFileSync(join(tmp.dir, 'jwks.json'), JSON.stringify({ keys: [jwk] }));
    running = await startGateway(join(tmp.dir, 'jwt.yaml'), {
      yaml: `${TIERS}identity:
  jwt: { jwksFile: jwks.json, issuer: https://auth.test, audience: sluice-api }
`,
    });
    const pending = admitRequest(running.gateway, request({ authorization: 'Bearer not-a-jwt' }));
    expect(isThenable(pending)).toBe(true);
    await expect(pending).resolves.toMatchObject({ kind: 'deny', status: 401 });
    // Without credentials the same gateway still answers in the same tick.
    expect(isThenable(admitRequest(running.gateway, request()))).toBe(false);
  });
});

describe('request targets in the YAML', () => {
  it('refuses an encoded slash by default and decodes it with target.encodedSlashes: decode', async () => {
    const yaml = `${TIERS}  endpoints:
    - pattern: "/system/airgap/seal"
      limit: 5
      window: 3600s
`;
    running = await startGateway(join(tmp.dir, 'reject.yaml'), { yaml });
    const refused = admitRequest(running.gateway, { ...request(), path: '/system/airgap%2Fseal' });
    expect(refused).toMatchObject({ kind: 'deny', status: 400, outcome: 'bad_target_encoded_separator' });
    await running.gateway.close();
    running = await startGateway(join(tmp.dir, 'decode.yaml'), {
      yaml: `${yaml}target:\n  encodedSlashes: decode\n`,
    });
    const decoded = admitRequest(running.gateway, { ...request(), path: '/system/airgap%2Fseal' });
    expect(decoded).toMatchObject({ kind: 'allow' });
    expect((decoded as { headers: readonly (readonly string[])[] }).headers[0][1]).toContain(
      '"/system/airgap/seal"',
    );
  });

  it('refuses a ; path parameter by default, strips it with target.pathParameters: strip, keeps it with keep', async () => {
    const yaml = `${TIERS}  endpoints:
    - pattern: "/system/airgap/seal"
      limit: 5
      window: 3600s
`;
    const at = (path: string) => admitRequest((running as TestGateway).gateway, { ...request(), path });
    running = await startGateway(join(tmp.dir, 'semi-reject.yaml'), { yaml });
    expect(at('/system/airgap/seal;x=1')).toMatchObject({
      kind: 'deny',
      status: 400,
      outcome: 'bad_target_path_parameter',
    });
    await running.gateway.close();
    running = await startGateway(join(tmp.dir, 'semi-strip.yaml'), {
      yaml: `${yaml}target:\n  pathParameters: strip\n`,
    });
    const stripped = at('/system/airgap/seal;x=1');
    expect(stripped).toMatchObject({ kind: 'allow' });
    expect((stripped as { headers: readonly (readonly string[])[] }).headers[0][1]).toContain(
      '"/system/airgap/seal"',
    );
    await running.gateway.close();
    running = await startGateway(join(tmp.dir, 'semi-keep.yaml'), {
      yaml: `${yaml}target:\n  pathParameters: keep\n`,
    });
    const kept = at('/system/airgap/seal;x=1');
    expect(kept).toMatchObject({ kind: 'allow' });
    expect((kept as { headers: readonly (readonly string[])[] }).headers[0][1]).not.toContain('seal');
  });

  it('counts a prefix with a trailing slash against the prefix rule as well as its parent', async () => {
    running = await startGateway(join(tmp.dir, 'prefix.yaml'), {
      yaml: `${TIERS}  endpoints:
    - { pattern: "/api/risk/simulation/*", limit: 30, window: 60s }
    - { pattern: "/api/risk/simulation/studio/*", limit: 10, window: 60s }
`,
    });
    for (const path of [
      '/api/risk/simulation/studio/',
      '/api/risk/simulation/studio//x/..',
      '/api/risk/simulation/studio/%2e',
    ]) {
      const r = admitRequest(running.gateway, { ...request(), path });
      const policy = (r as { headers: readonly (readonly string[])[] }).headers.find(([n]) =>
        /policy/i.test(n),
      );
      expect(policy?.[1], path).toContain('"/api/risk/simulation/studio/*"');
    }
  });
});
