/**
 * Bad input is a 4xx problem, never a 500, on the proxy listener and the decision API: bounded fast-check runs send
 * random request targets and header values byte for byte over a socket, and every answer must be below 500 (the
 * upstream here answers 200 to whatever reaches it), with the listener still serving afterwards. The admin and
 * dashboard routes have their own fuzz test (admin-fuzz.e2e.test.ts).
 */
import { join } from 'node:path';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  client,
  decisionEndpoint,
  rawStatus,
  send,
  startGateway,
  startUpstream,
  type TestGateway,
  type TestUpstream,
  tempDir,
} from './support.js';

const tmp = tempDir();
const agent = client();
let upstream: TestUpstream;
let t: TestGateway;

beforeAll(async () => {
  upstream = await startUpstream();
  t = await startGateway(join(tmp.dir, 'fuzz.yaml'), {
    yaml: `rateLimiting:
  defaultTier: free
  tiers:
    free: { requestsPerMinute: 600000, burstLimit: 100000 }
  endpoints:
    - { pattern: /system/airgap/seal, limit: 100000, window: 3600s }
identity:
  headers: {}
server:
  trustedProxies: [loopback]
decision:
  port: 0
`,
    overrides: { upstream: upstream.url },
  });
});
afterAll(async () => {
  await t?.gateway.close();
  await upstream?.close();
  await agent.close();
  tmp.cleanup();
});

const piece = fc.oneof(
  fc.constantFrom(
    '%',
    '%zz',
    '%2',
    '%25',
    '%2F',
    '%2f',
    '%5C',
    '%00',
    '%2e',
    '%2E%2E',
    '%73',
    '%C3%A9',
    '%FF',
    '/',
    '//',
    '\\',
    '..',
    '.',
    ';x=1',
    '?',
    '?a=%zz',
    '#',
    '#frag',
    '[',
    ']',
    '@',
    ':',
    '*',
    'é',
    '~',
    'seal',
    'system',
    'airgap',
  ),
  fc.string({ maxLength: 6 }).map((s) => s.replace(/\s/g, '')),
);
const target = fc
  .tuple(
    fc.constantFrom('/', '/system/airgap/', '/.well-known/', '/health/', '/api/', 'http://x/', '*', '', '//'),
    fc.array(piece, { maxLength: 8 }),
  )
  .map(([a, b]) => `${a}${b.join('')}`)
  .filter((s) => s !== '' && !/\s/.test(s));
const method = fc.constantFrom('GET', 'HEAD', 'POST', 'PUT', 'DELETE', 'OPTIONS', 'PATCH');
const address = fc.oneof(fc.ipV4(), fc.ipV4Extended(), fc.ipV6());
const headerValue = fc.oneof(
  fc.string({ maxLength: 40 }).map((s) => s.replace(/[\r\n]/g, '')),
  fc.array(address, { minLength: 1, maxLength: 3 }).map((a) => a.join(', ')),
);
const headers = fc.array(
  fc.tuple(
    fc.constantFrom(
      'authorization',
      'x-forwarded-for',
      'forwarded',
      'x-real-ip',
      'x-request-id',
      'x-tenant-id',
      'x-client-id',
      'x-tier',
      'content-length',
      'upgrade',
    ),
    headerValue,
  ),
  { maxLength: 4 },
);

describe('listener input', () => {
  it('answers every request target and header the proxy listener gets with a status below 500', async () => {
    const port = Number(new URL(t.gateway.url).port);
    await fc.assert(
      fc.asyncProperty(method, target, headers, async (m, path, h) => {
        // A declared body that never comes would hold the socket: the listener's body timeout is not under test.
        const hs = h.filter(([k]) => k !== 'content-length');
        const status = await rawStatus(port, m, path, hs);
        expect(status, `${m} ${JSON.stringify(path)} ${JSON.stringify(hs)}`).toBeLessThan(500);
      }),
      { numRuns: 150, seed: 1401 },
    );
    expect((await send(agent, `${t.gateway.url}/api/x`)).status).toBe(200);
  });

  it('takes every address form node:net accepts as a client address, on both listeners', async () => {
    // IPv6 with an IPv4 tail right after `::`, or a zone id with `-`, `.` or `:`: valid, and once a 500 (the
    // address parser threw).
    const url = new URL(decisionEndpoint(t.gateway));
    for (const ip of [
      '::1.2.3.4',
      '1:2:3:4:5::1.2.3.4',
      '::0.0.0.0',
      '0:1::0:0:0.0.0.0',
      'fe80::1.2.3.4%eth0',
      'fe80::1%eth-0',
      'fe80::1%en0.1',
      '2001:db8::1%a:b',
    ]) {
      const proxied = await send(agent, `${t.gateway.url}/api/x`, { headers: { 'x-forwarded-for': ip } });
      expect(proxied.status, ip).toBe(200);
      const decided = await send(agent, url.href, {
        headers: { 'x-original-uri': '/api/x', 'x-original-method': 'GET', 'x-real-ip': ip },
      });
      expect(decided.status, ip).toBe(200);
    }
  });

  it('answers every original URI and header the decision API gets with a status below 500', async () => {
    const url = new URL(decisionEndpoint(t.gateway));
    const port = Number(url.port);
    await fc.assert(
      fc.asyncProperty(method, target, headers, async (m, original, h) => {
        const hs: [string, string][] = [
          ['x-original-uri', original],
          ['x-original-method', m],
          ['x-real-ip', '203.0.113.9'],
          ...h.filter(([k]) => k !== 'content-length'),
        ];
        const status = await rawStatus(port, 'GET', url.pathname, hs);
        expect(status, `${m} ${JSON.stringify(original)} ${JSON.stringify(h)}`).toBeLessThan(500);
      }),
      { numRuns: 150, seed: 1402 },
    );
    const ok = await send(agent, url.href, {
      headers: { 'x-original-uri': '/api/x', 'x-original-method': 'GET', 'x-real-ip': '203.0.113.9' },
    });
    expect(ok.status).toBe(200);
  });
});
