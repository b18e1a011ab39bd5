import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  client,
  makeCertificates,
  send,
  signLeaf,
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

/** A client certificate signed by the test CA, its subject written in OpenSSL's `-subj` form. */
const leaf = (name: string, subject: string) => signLeaf(tmp.dir, name, subject);

function agent(c: { cert: string; key: string }) {
  const a = client({
    ca: readFileSync(certs['ca.pem']),
    cert: readFileSync(c.cert),
    key: readFileSync(c.key),
  });
  agents.push(a);
  return a;
}

beforeAll(async () => {
  certs = makeCertificates(tmp.dir);
  upstream = await startUpstream();
  running = await startGateway(join(tmp.dir, 'mtls.yaml'), {
    yaml: `rateLimiting:
  defaultTier: free
  tiers:
    free: { requestsPerMinute: 60, burstLimit: 1 }
server:
  tls: { cert: server.pem, key: server.key, clientCa: ca.pem }
exemptions:
  mtls: { allowedSubjects: ["CN=billing,O=internal", "CN=a\\\\,b,O=internal"] }
`,
    overrides: { upstream: upstream.url },
  });
});
afterAll(async () => {
  await running?.gateway.close();
  await upstream.close();
  for (const a of agents) await a.close();
  tmp.cleanup();
});

describe('mTLS allowed subjects against signed certificates', () => {
  it('exempt the subject with exactly those attributes, and an escaped comma as part of one CN', async () => {
    const base = running!.gateway.url;
    const billing = agent({ cert: certs['billing.pem'], key: certs['billing.key'] });
    expect(await statuses(billing, `${base}/x`, 3)).toEqual([200, 200, 200]);
    expect((await send(billing, `${base}/x`)).headers.ratelimit).toBeUndefined();
    const comma = agent(leaf('comma', '/CN=a,b/O=internal'));
    expect(await statuses(comma, `${base}/x`, 3)).toEqual([200, 200, 200]);
  });

  it.each([
    ['one CN spelling the allowed subject', '/CN=billing,O=internal'],
    ['one CN spelling it with its type', '/CN=CN=billing,O=internal'],
    ['another organisation', '/CN=billing/O=external'],
    ['one more attribute', '/CN=billing/O=internal/OU=guests'],
  ])('limit a certificate with %s', async (name, subject) => {
    const a = agent(leaf(name.replaceAll(' ', '-'), subject));
    // Limited callers share the address's bucket (one token): limited means answered with RateLimit fields.
    const r = await send(a, `${running!.gateway.url}/x`);
    expect(r.headers.ratelimit).toBeDefined();
  });
});
