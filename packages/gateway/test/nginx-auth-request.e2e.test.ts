import { join } from 'node:path';
import type { Agent } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { authRequestConfig, type RunningNginx, startNginx } from '../../../test/support/nginx.js';
import { freePort } from '../../../test/support/redis-server.js';
import {
  client,
  send,
  startGateway,
  startUpstream,
  type TestGateway,
  type TestUpstream,
  tempDir,
  WALL_MS,
} from './support.js';

const YAML = `rateLimiting:
  defaultTier: standard
  tiers:
    standard:
      requestsPerMinute: 300
      burstLimit: 3
  endpoints:
    - pattern: "/api/risk/simulation/studio/*"
      limit: 10
      window: 60s
headers:
  mode: both
problems:
  typeBase: https://errors.example.com/problems/
identity:
  apiKeys:
    file: keys.yaml
decision:
  port: 0
admin:
  port: 0
  token: \${ADMIN_TOKEN}
`;
const TOKEN = 'admin-token-0123456789';

/**
 * A real NGINX (Debian's package) in front of a test application, asking Sluice through auth_request with the
 * configuration docs/nginx.md documents; traffic goes through NGINX only.
 */
describe('NGINX auth_request in front of the decision API', () => {
  const { dir, cleanup } = tempDir();
  let upstream: TestUpstream;
  let t: TestGateway;
  let nginx: RunningNginx;
  let agent: Agent;
  let base: string;

  beforeAll(async () => {
    const { writeFileSync } = await import('node:fs');
    const { hashApiKey } = await import('../src/identity/api-key-file.js');
    writeFileSync(
      join(dir, 'keys.yaml'),
      `keys:\n  - hash: ${hashApiKey('good-key-0123456789')}\n    tenant: acme\n    tier: standard\n`,
    );
    upstream = await startUpstream();
    t = await startGateway(join(dir, 'rl.yaml'), {
      yaml: `${YAML}upstream:\n  url: ${upstream.url}\n`,
      env: { ADMIN_TOKEN: TOKEN },
    });
    const port = await freePort();
    const decision = new URL(t.gateway.decisionUrl as string).host;
    const app = new URL(upstream.url).host;
    nginx = await startNginx((prefix) => authRequestConfig({ port, decision, upstream: app, prefix }), port);
    base = `http://127.0.0.1:${port}`;
    agent = client();
  });
  afterAll(async () => {
    await agent?.close();
    await nginx?.stop();
    await t?.gateway.close();
    await upstream?.close();
    cleanup();
  });

  it('passes allowed requests to the application with the RateLimit headers copied', async () => {
    const r = await send(agent, `${base}/api/items?page=2`, { headers: { 'x-real-ip': '6.6.6.6' } });
    expect(r.status).toBe(200);
    expect(r.headers['x-upstream']).toBe('yes');
    expect(r.json().url).toBe('/api/items?page=2');
    expect(r.headers['ratelimit-policy']).toBe('"standard";q=300;w=60');
    expect(r.headers.ratelimit).toBe('"standard";r=2;t=1');
    expect(r.headers['x-ratelimit-limit']).toBe('300');
    expect(r.headers['x-ratelimit-remaining']).toBe('2');
    expect(r.headers['x-ratelimit-reset']).toBe(String(WALL_MS / 1000 + 1));
    expect(r.headers['x-ratelimit-policy']).toBe('standard');
    expect(r.headers['retry-after']).toBeUndefined();
  });

  it('answers the 429 itself with Retry-After, the headers and the problem body; the application never sees it', async () => {
    // The client's own X-Real-IP was ignored above: NGINX sets it from the connection, so 127.0.0.1 is the key.
    expect((await send(agent, `${base}/a`)).status).toBe(200);
    expect((await send(agent, `${base}/b`)).status).toBe(200);
    const seen = upstream.seen.length;
    const denied = await send(agent, `${base}/api/risk/simulation?x=1`, {
      headers: { 'x-request-id': 'ignored' },
    });
    expect(upstream.seen.length).toBe(seen);
    expect(denied.status).toBe(429);
    expect(denied.headers['content-type']).toBe('application/problem+json');
    expect(denied.headers['retry-after']).toBe('1');
    expect(denied.headers['ratelimit-policy']).toBe('"standard";q=300;w=60');
    expect(denied.headers.ratelimit).toBe('"standard";r=0;t=1');
    expect(denied.headers['x-ratelimit-remaining']).toBe('0');
    expect(denied.headers['cache-control']).toBe('no-store');
    expect(denied.headers['x-ratelimit-problem']).toBeUndefined();
    const body = denied.json();
    expect(body).toMatchObject({
      type: 'https://errors.example.com/problems/rate-limit-exceeded',
      title: 'Rate Limit Exceeded',
      status: 429,
      detail:
        'Rate limit "standard" exceeded: bursts of up to 3 requests, refilled at 300 per minute; retry in 1 s.',
      instance: '/api/risk/simulation',
      code: 'rate_limited',
      limit: 300,
      remaining: 0,
      reset: WALL_MS / 1000 + 1,
      retryAfter: 1,
      'violated-policies': ['standard'],
    });
    // NGINX's $request_id is the correlation id (32 hex digits), not the client's header.
    expect(body.correlation_id).toMatch(/^[0-9a-f]{32}$/);
  });

  it('lets traffic through again once the bucket refills', async () => {
    // 300 per minute is one token every 200 ms.
    t.clock.advance(100);
    expect((await send(agent, `${base}/c`)).status).toBe(429);
    t.clock.advance(100);
    const r = await send(agent, `${base}/c`);
    expect(r.status).toBe(200);
    expect(r.headers.ratelimit).toBe('"standard";r=0;t=1');
  });

  it('applies endpoint rules by the original path and method', async () => {
    t.clock.advance(60_000);
    const h = { 'x-api-key': 'good-key-0123456789' };
    const r = await send(agent, `${base}/api/risk/simulation/studio/run`, {
      method: 'POST',
      headers: h,
      body: '{}',
    });
    expect(r.status).toBe(200);
    expect(r.json().method).toBe('POST');
    expect(r.json().bytes).toBe(2);
    expect(r.headers.ratelimit).toBe('"standard";r=2;t=1, "/api/risk/simulation/studio/*";r=9;t=6');
  });

  it('returns 401 with the problem body for an invalid API key', async () => {
    const r = await send(agent, `${base}/x`, { headers: { 'x-api-key': 'wrong-key' } });
    expect(r.status).toBe(401);
    expect(r.headers['content-type']).toBe('application/problem+json');
    expect(r.json()).toMatchObject({ status: 401, code: 'invalid_credentials' });
  });

  it('relays a 400 about the request target with the problem body, not as an NGINX 500', async () => {
    const seen = upstream.seen.length;
    const r = await send(agent, `${base}/files/a%2Fb`);
    expect(r.status).toBe(400);
    expect(r.headers['content-type']).toBe('application/problem+json');
    expect(r.json()).toMatchObject({ status: 400, code: 'bad_request_target' });
    expect(upstream.seen.length).toBe(seen);
  });

  it("relays a 403 block with the problem body, not as NGINX's HTML 403", async () => {
    const auth = { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' };
    const set = await send(agent, `${t.gateway.adminUrl}/overrides`, {
      method: 'PUT',
      headers: auth,
      body: JSON.stringify({ pattern: 'tenant:acme', block: 403, reason: 'abuse' }),
    });
    expect(set.status).toBe(200);
    const r = await send(agent, `${base}/x`, { headers: { 'x-api-key': 'good-key-0123456789' } });
    expect(r.status).toBe(403);
    expect(r.headers['content-type']).toBe('application/problem+json');
    expect(r.headers['cache-control']).toBe('no-store');
    expect(r.json()).toMatchObject({ status: 403, code: 'blocked' });
    const rm = await send(agent, `${t.gateway.adminUrl}/overrides?id=tenant%3Aacme&reason=done`, {
      method: 'DELETE',
      headers: auth,
    });
    expect(rm.status).toBe(200);
  });

  it('logs each 429 and 400 as an unexpected auth request status, and no 401 or 403', () => {
    const log = nginx.errorLog();
    expect(log).toMatch(/\[error\].*auth request unexpected status: 429/);
    expect(log).toMatch(/\[error\].*auth request unexpected status: 400/);
    expect(log).not.toMatch(/unexpected status: 40[13]/);
  });

  it('fails closed with 500 when Sluice cannot be reached', async () => {
    await t.gateway.close();
    const r = await send(agent, `${base}/x`);
    expect(r.status).toBe(500);
    expect(nginx.errorLog()).toMatch(/connect\(\) failed|auth request unexpected status/);
  });
});

describe('docs/nginx.md', () => {
  it('shows exactly the configuration the end-to-end test runs', async () => {
    const { readFileSync } = await import('node:fs');
    const doc = readFileSync(new URL('../../../docs/nginx.md', import.meta.url), 'utf8');
    const block = /```nginx\nhttp \{\n([\s\S]*?)\}\n```/.exec(doc)?.[1];
    const text = authRequestConfig({
      port: 80,
      decision: '127.0.0.1:8082',
      upstream: '127.0.0.1:3000',
      prefix: '/p',
    });
    const server = text
      .slice(text.indexOf('  upstream sluice_decision {'), text.lastIndexOf('}'))
      .replace(/\n+$/, '\n');
    expect(block).toBe(server);
  });
});
