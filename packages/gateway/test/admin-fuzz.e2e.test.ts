import { join } from 'node:path';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildDashboard } from '../dashboard-ui/build.js';
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

const TOKEN = 'admin-fuzz-token-0123456789';
const tmp = tempDir();
const agent = client();
let upstream: TestUpstream;
let t: TestGateway;
let port: number;

beforeAll(async () => {
  // The page and its bundle are dashboard routes too: without a build they answer 503 on purpose.
  await buildDashboard();
  upstream = await startUpstream();
  t = await startGateway(join(tmp.dir, 'fuzz.yaml'), {
    yaml: `rateLimiting:
  defaultTier: free
  tiers:
    free: { requestsPerMinute: 60, burstLimit: 5 }
admin:
  port: 0
  token: \${ADMIN_TOKEN}
quota:
  tracking: { storage: memory }
`,
    env: { ADMIN_TOKEN: TOKEN },
    overrides: { upstream: upstream.url },
  });
  port = Number(new URL(t.gateway.adminUrl as string).port);
});
afterAll(async () => {
  await t?.gateway.close();
  await upstream?.close();
  await agent.close();
  tmp.cleanup();
});

const AUTH: [string, string] = ['authorization', `Bearer ${TOKEN}`];

// Characters that break naive URL handling: escapes, separators, brackets, non-ASCII.
const piece = fc.oneof(
  fc.constantFrom(
    '%',
    '%zz',
    '%2',
    '%25',
    '%2F',
    '%00',
    '%C3%A9',
    '%E0%A4%A',
    '%FF',
    '/',
    '//',
    '\\',
    '..',
    '.',
    '?',
    '?n=',
    '&',
    '#',
    '[',
    ']',
    '@',
    ':',
    '*',
    'é',
    '~',
    'ip%3A1.2.3.4',
    'acme:bot',
  ),
  fc.string({ maxLength: 6 }).map((s) => s.replace(/[\s]/g, '')),
);
const suffix = fc.array(piece, { maxLength: 8 }).map((p) => p.join(''));
const apiTarget = fc
  .tuple(
    fc.constantFrom(
      '/keys/',
      '/quota/tenants/',
      '/quota/top',
      '/limited-keys/top',
      '/config',
      '/',
      '//',
      '/nope/',
      '',
    ),
    suffix,
  )
  .map(([a, b]) => `${a}${b}`);
const dashboardTarget = fc
  .tuple(
    fc.constantFrom(
      '/dashboard',
      '/dashboard/',
      '/dashboard/state',
      '/dashboard/app.js',
      '/dashboard/events',
    ),
    suffix,
  )
  .map(([a, b]) => `${a}${b}`);
const method = fc.constantFrom('GET', 'HEAD', 'DELETE', 'POST', 'PUT', 'OPTIONS', 'PATCH', 'get', 'X-CUSTOM');
// Header values as sent on the wire: printable ASCII and Latin-1, no line breaks (those would end the header).
const headerValue = fc.string({ maxLength: 40 }).map((s) => s.replace(/[\r\n]/g, ''));
const headers = fc.tuple(
  fc.oneof(
    fc.constant(AUTH),
    headerValue.map((v): [string, string] => ['authorization', v]),
  ),
  fc.array(
    fc.tuple(
      fc.constantFrom('accept', 'x-api-key', 'if-none-match', 'content-type', 'x-request-id'),
      headerValue,
    ),
    { maxLength: 3 },
  ),
);

async function stillServes(): Promise<void> {
  const r = await send(agent, `${t.gateway.adminUrl}/config`, {
    headers: { authorization: `Bearer ${TOKEN}` },
  });
  expect(r.status).toBe(200);
}

describe('admin listener input', () => {
  it('answers a malformed escape in a key or tenant with 400 problem+json, not 500', async () => {
    for (const path of ['/keys/%zz', '/keys/%E0%A4%A', '/quota/tenants/%zz']) {
      const r = await send(agent, `${t.gateway.adminUrl}${path}`, {
        headers: { authorization: `Bearer ${TOKEN}` },
      });
      expect(r.status, path).toBe(400);
      expect(r.headers['content-type']).toBe('application/problem+json');
      expect(r.json()).toMatchObject({
        status: 400,
        title: 'Bad Request',
        code: 'bad_request',
        instance: path,
      });
    }
    const del = await send(agent, `${t.gateway.adminUrl}/keys/%zz`, {
      method: 'DELETE',
      headers: { authorization: `Bearer ${TOKEN}` },
    });
    expect(del.status).toBe(400);
    // Without the token the answer stays 401: nothing about the request is looked at first.
    expect((await send(agent, `${t.gateway.adminUrl}/keys/%zz`)).status).toBe(401);
  });

  it('answers targets that are not a path of the listener with 4xx and keeps serving', async () => {
    // Before the fix, "//[" threw out of the handler: no answer at all, and an unhandled rejection.
    for (const [target, status] of [
      ['//[', 404],
      ['//a:b@[::1/config', 404],
      ['/keys/%', 400],
      ['http://admin/config', 400],
      ['*', 400],
    ] as const) {
      expect(await rawStatus(port, target === '*' ? 'OPTIONS' : 'GET', target, [AUTH]), target).toBe(status);
    }
    await stillServes();
  });

  it('answers any request target, method and header values below 500 and keeps serving (property)', async () => {
    await fc.assert(
      fc.asyncProperty(method, apiTarget, headers, async (m, target, [auth, extra]) => {
        const status = await rawStatus(port, m, target === '' ? '/' : target, [auth, ...extra]);
        expect(status, `${m} ${target}`).toBeLessThan(500);
      }),
      { numRuns: 150 },
    );
    await stillServes();
  });

  it('answers any dashboard route, method and header values below 500 and keeps serving (property)', async () => {
    await fc.assert(
      fc.asyncProperty(method, dashboardTarget, headers, async (m, target, [auth, extra]) => {
        const status = await rawStatus(port, m, target, [auth, ...extra]);
        expect(status, `${m} ${target}`).toBeLessThan(500);
      }),
      { numRuns: 150 },
    );
    await stillServes();
  });
});
