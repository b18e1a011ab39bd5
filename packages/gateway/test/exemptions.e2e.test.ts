import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import {
  client,
  makeCertificates,
  send,
  startGateway,
  startUpstream,
  statuses,
  type TestGateway,
  type TestUpstream,
  tempDir,
} from './support.js';

const tmp = tempDir();
let certs: Record<string, string>;
let upstream: TestUpstream;
let running: TestGateway | undefined;
const agents: ReturnType<typeof client>[] = [];

const TIERS = `rateLimiting:
  defaultTier: free
  tiers:
    free: { requestsPerMinute: 60, burstLimit: 3 }
`;

beforeAll(async () => {
  certs = makeCertificates(tmp.dir);
  upstream = await startUpstream();
});
afterAll(async () => {
  await upstream.close();
  for (const a of agents) await a.close();
  tmp.cleanup();
});
afterEach(async () => {
  await running?.gateway.close();
  running = undefined;
});

function agent(cert?: string, key?: string) {
  const a = client({
    ca: readFileSync(certs['ca.pem']),
    ...(cert === undefined ? {} : { cert: readFileSync(cert), key: readFileSync(key as string) }),
  });
  agents.push(a);
  return a;
}

describe('mTLS service traffic', () => {
  it('exempts a verified client certificate with an allowed subject, and nobody else', async () => {
    running = await startGateway(join(tmp.dir, 'tls.yaml'), {
      yaml: `${TIERS}server:
  tls: { cert: server.pem, key: server.key, clientCa: ca.pem }
exemptions:
  mtls: { allowedSubjects: [billing, "CN=reports,O=internal"] }
`,
      overrides: { upstream: upstream.url },
    });
    const base = running.gateway.url;
    expect(base).toMatch(/^https:\/\/127\.0\.0\.1:/);
    const billing = agent(certs['billing.pem'], certs['billing.key']);
    expect((await statuses(billing, `${base}/x`, 10)).every((c) => c === 200)).toBe(true);
    expect((await send(billing, `${base}/x`)).headers.ratelimit).toBeUndefined();
    expect(upstream.seen.at(-1)?.headers['x-forwarded-proto']).toBe('https');
    // Signed by the CA but not allowed; self-signed with the allowed name; no certificate: all limited.
    expect(await statuses(agent(certs['intruder.pem'], certs['intruder.key']), `${base}/x`, 4)).toEqual([
      200, 200, 200, 429,
    ]);
    expect((await send(agent(certs['rogue.pem'], certs['rogue.key']), `${base}/x`)).status).toBe(429);
    expect((await send(agent(), `${base}/x`)).status).toBe(429);
    const metrics = await send(agent(), `${base}/metrics`);
    expect(metrics.text).toMatch(/sluice_exempt_total\{[^}]*reason="mtls"[^}]*\} 11/);
  });
});

describe('loopback in development mode', () => {
  it('exempts loopback clients in development mode only', async () => {
    const a = client();
    agents.push(a);
    running = await startGateway(join(tmp.dir, 'dev.yaml'), {
      yaml: `${TIERS}server: { mode: development }\n`,
      overrides: { upstream: upstream.url },
    });
    expect((await statuses(a, `${running.gateway.url}/x`, 10)).every((c) => c === 200)).toBe(true);
    await running.gateway.close();
    running = await startGateway(join(tmp.dir, 'prod.yaml'), {
      yaml: `${TIERS}server: { mode: production }\n`,
      overrides: { upstream: upstream.url },
    });
    expect(await statuses(a, `${running.gateway.url}/x`, 4)).toEqual([200, 200, 200, 429]);
  });

  it('does not exempt a remote client forwarded by a loopback proxy', async () => {
    const a = client();
    agents.push(a);
    running = await startGateway(join(tmp.dir, 'devp.yaml'), {
      yaml: `${TIERS}server: { mode: development, trustedProxies: [loopback] }\n`,
      overrides: { upstream: upstream.url },
    });
    expect(await statuses(a, `${running.gateway.url}/x`, 4, { 'x-forwarded-for': '198.51.100.7' })).toEqual([
      200, 200, 200, 429,
    ]);
    expect((await statuses(a, `${running.gateway.url}/x`, 5)).every((c) => c === 200)).toBe(true);
  });
});

describe('exempt endpoints', () => {
  it('replaces the defaults when configured, honours methods, and counts exempt requests', async () => {
    const a = client();
    agents.push(a);
    running = await startGateway(join(tmp.dir, 'ep.yaml'), {
      yaml: `${TIERS}exemptions:\n  endpoints: ["POST /hooks/*", /public/*]\n`,
      overrides: { upstream: upstream.url },
    });
    const base = running.gateway.url;
    for (let i = 0; i < 5; i++) {
      expect((await send(a, `${base}/hooks/github`, { method: 'POST', body: 'x' })).status).toBe(200);
      expect((await send(a, `${base}/public/a/b`, { method: 'DELETE' })).status).toBe(200);
    }
    expect(await statuses(a, `${base}/hooks/github`, 4)).toEqual([200, 200, 200, 429]);
    expect((await send(a, `${base}/.well-known/x`)).status).toBe(429);
  });
});

describe('rateLimiting.enabled: false', () => {
  it('proxies everything unlimited and counts it as exempt', async () => {
    const a = client();
    agents.push(a);
    running = await startGateway(join(tmp.dir, 'off.yaml'), {
      yaml: TIERS.replace('defaultTier: free', 'enabled: false\n  defaultTier: free'),
      overrides: { upstream: upstream.url },
    });
    expect((await statuses(a, `${running.gateway.url}/x`, 6)).every((c) => c === 200)).toBe(true);
    expect((await send(a, `${running.gateway.url}/x`)).headers.ratelimit).toBeUndefined();
    expect((await send(a, `${running.gateway.url}/metrics`)).text).toMatch(
      /sluice_exempt_total\{[^}]*reason="disabled"[^}]*\} 7/,
    );
  });
});
