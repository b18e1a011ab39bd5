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

// Every error of the admin listener is application/problem+json with a stable code: a method a route does not
// answer is 405 `method_not_allowed` with Allow, on every route alike.

const TOKEN = 'admin-methods-token-0123456789';
const tmp = tempDir();
const agent = client();
let upstream: TestUpstream;
let t: TestGateway;
let admin: string;
const auth = { authorization: `Bearer ${TOKEN}` };

beforeAll(async () => {
  upstream = await startUpstream();
  t = await startGateway(join(tmp.dir, 'methods.yaml'), {
    yaml: `rateLimiting:
  defaultTier: free
  tiers:
    free: { requestsPerMinute: 60 }
admin: { port: 0, token: ${TOKEN} }
`,
    overrides: { upstream: upstream.url },
  });
  admin = t.gateway.adminUrl as string;
});
afterAll(async () => {
  await t?.gateway.close();
  await upstream?.close();
  await agent.close();
  tmp.cleanup();
});

async function expectNotAllowed(method: string, path: string, allow: string): Promise<void> {
  const r = await send(agent, `${admin}${path}`, { method, headers: auth });
  expect(r.status, `${method} ${path}`).toBe(405);
  expect(r.headers.allow, `${method} ${path}`).toBe(allow);
  expect(r.headers['content-type'], `${method} ${path}`).toBe('application/problem+json');
  expect(r.json()).toMatchObject({ status: 405, code: 'method_not_allowed', instance: path });
}

describe('admin methods', () => {
  it('answers a method /config does not take with 405 and Allow, and HEAD as GET without a body', async () => {
    for (const m of ['POST', 'PUT', 'DELETE', 'PATCH']) await expectNotAllowed(m, '/config', 'GET, HEAD');
    const get = await send(agent, `${admin}/config`, { headers: auth });
    const head = await send(agent, `${admin}/config`, { method: 'HEAD', headers: auth });
    expect(head.status).toBe(200);
    expect(head.headers['content-type']).toBe(get.headers['content-type']);
    expect(head.text).toBe('');
  });

  it('answers a method the dashboard data routes do not take with a 405 problem', async () => {
    for (const path of ['/dashboard/state', '/dashboard/events'])
      for (const m of ['POST', 'PUT', 'DELETE']) await expectNotAllowed(m, path, 'GET');
  });

  it('still answers 401 before any method check without the token', async () => {
    const r = await send(agent, `${admin}/config`, { method: 'POST' });
    expect(r.status).toBe(401);
  });
});
