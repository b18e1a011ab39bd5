import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  client,
  send,
  startGateway,
  startUpstream,
  type TestGateway,
  type TestUpstream,
  tempDir,
} from './support.js';

/**
 * `/metrics` on both listeners with tenant quota tracking: the proxy listener answers any client of the API, so
 * its copy leaves out the per-tenant series (tenant names and their usage); the admin listener's, behind its
 * token, has them.
 */

const tmp = tempDir();
const agent = client();
const TOKEN = 'metrics-admin-token-0123456789';
let upstream: TestUpstream;
let t: TestGateway;

beforeAll(async () => {
  upstream = await startUpstream();
  t = await startGateway(join(tmp.dir, 'metrics.yaml'), {
    yaml: `rateLimiting:
  defaultTier: free
  tiers:
    free: { requestsPerMinute: 600, burstLimit: 100 }
server: { trustedProxies: [loopback] }
identity: { headers: {} }
admin: { port: 0, token: ${TOKEN} }
upstream: { url: "${upstream.url}" }
quota:
  tracking: { storage: memory, bucket: 60s, ttl: 3600 }
  limits: { tenants: { megacorp-secret-customer: 1000 } }
`,
  });
  for (let i = 0; i < 3; i++)
    await send(agent, `${t.gateway.url}/echo`, {
      headers: { 'x-tenant-id': 'megacorp-secret-customer', 'x-client-id': 'app' },
    });
  await t.gateway.quota!.tracker.flush();
});
afterAll(async () => {
  await t.gateway.close();
  await upstream.close();
  await agent.close();
  tmp.cleanup();
});

describe('per-tenant metric series', () => {
  it('are served on the admin listener, behind its token', async () => {
    const admin = await send(agent, `${t.gateway.adminUrl}/metrics`, {
      headers: { authorization: `Bearer ${TOKEN}` },
    });
    expect(admin.status).toBe(200);
    expect(admin.text).toMatch(/^sluice_quota_usage_ratio\{tenant="megacorp-secret-customer"\} 0\.003$/m);
    expect((await send(agent, `${t.gateway.adminUrl}/metrics`)).status).toBe(401);
  });

  it('are left out of the proxy listener, which keeps every other series', async () => {
    const proxy = await send(agent, `${t.gateway.url}/metrics`);
    expect(proxy.status).toBe(200);
    expect(proxy.text).not.toContain('megacorp');
    expect(proxy.text).not.toContain('sluice_quota_usage_ratio');
    expect(proxy.text).toMatch(/^sluice_decisions_total\{/m);
    // HEAD still answers without a body.
    expect((await send(agent, `${t.gateway.url}/metrics`, { method: 'HEAD' })).status).toBe(200);
  });
});
