import { join } from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { type AdmissionRequest, admitRequest } from '../src/admission/admit-request.js';
import { startGateway, type TestGateway, tempDir, WALL_MS } from './support.js';

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

function request(headers: Record<string, string>, trusted = true): AdmissionRequest {
  return {
    method: 'GET',
    path: '/api/items',
    headers,
    clientIp: '203.0.113.7',
    trustIdentityHeaders: trusted,
    cost: 1,
    correlationId: 'req-1',
    nowMs: WALL_MS,
  };
}

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
    const a = await admitRequest(running.gateway, request(headers));
    expect(a).toMatchObject({
      kind: 'deny',
      status: 400,
      outcome: 'invalid_identity_header',
      key: undefined,
    });
    if (a.kind !== 'deny') return;
    const body = JSON.parse(a.body) as Record<string, unknown>;
    expect(body).toMatchObject({ status: 400, code: 'invalid_identity_header', correlation_id: 'req-1' });
    expect(String(body.detail)).toContain(name);
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
