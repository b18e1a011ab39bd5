import { writeFileSync } from 'node:fs';
import { connect } from 'node:net';
import { join } from 'node:path';
import { credentials, type ServiceError } from '@grpc/grpc-js';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { rateLimitPackage } from '../src/envoy/grpc-server.js';
import {
  client,
  send,
  startGateway,
  startUpstream,
  type TestGateway,
  type TestUpstream,
  tempDir,
} from './support.js';

const TIERS = `rateLimiting:
  defaultTier: free
  tiers:
    free: { requestsPerMinute: 60, burstLimit: 2 }
headers:
  mode: draft-11
`;

const ENVOY = `envoy:
  port: 0
  domains:
    - domain: edge
      descriptors:
        - key: remote_address
          rate_limit:
            requests_per_unit: 1
            unit: minute
`;

/** Sends a raw HTTP/1.1 head and returns what the gateway answered, up to the close. */
function rawExchange(url: string, head: string): Promise<string> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve, reject) => {
    const socket = connect(Number(port), hostname, () => socket.write(head));
    let text = '';
    socket.setEncoding('utf8');
    socket.on('data', (c: string) => {
      text += c;
    });
    socket.on('end', () => resolve(text));
    socket.on('error', reject);
  });
}

describe('Gateway owns every configured listener', () => {
  const { dir, cleanup } = tempDir();
  const agent = client();
  let upstream: TestUpstream;
  let t: TestGateway | undefined;

  beforeAll(async () => {
    upstream = await startUpstream();
  });
  afterEach(async () => {
    await t?.gateway.close();
    t = undefined;
  });
  afterAll(async () => {
    await agent.close();
    await upstream.close();
    cleanup();
  });

  it('starts the decision API of a decision: section and answers /decide with the proxy policies', async () => {
    t = await startGateway(join(dir, 'decision.yaml'), {
      yaml: `${TIERS}upstream:\n  url: ${upstream.url}\ndecision:\n  port: 0\n`,
    });
    const base = t.gateway.decisionUrl;
    expect(base).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    const ask = () =>
      send(agent, `${base}/decide`, { headers: { 'x-original-uri': '/api/x', 'x-real-ip': '203.0.113.7' } });
    const first = await ask();
    expect([first.status, first.headers.ratelimit]).toEqual([200, '"free";r=1;t=1']);
    await ask();
    expect((await ask()).status).toBe(429);
    // Only the configured listeners start.
    expect(t.gateway.envoyAddress).toBeUndefined();
  });

  it('starts the Envoy rate limit service of an envoy: section', async () => {
    t = await startGateway(join(dir, 'envoy.yaml'), { yaml: `${TIERS}${ENVOY}` });
    const address = t.gateway.envoyAddress;
    expect(address).toMatch(/^127\.0\.0\.1:\d+$/);
    expect(t.gateway.decisionUrl).toBeUndefined();
    const { RateLimitService } = rateLimitPackage();
    const rls = new RateLimitService(address as string, credentials.createInsecure());
    const ask = () =>
      new Promise<{ overall_code: string }>((resolve, reject) =>
        rls.ShouldRateLimit(
          { domain: 'edge', descriptors: [{ entries: [{ key: 'remote_address', value: '10.1.1.1' }] }] },
          (e: ServiceError | null, r: { overall_code: string }) => (e ? reject(e) : resolve(r)),
        ),
      );
    try {
      expect((await ask()).overall_code).toBe('OK');
      expect((await ask()).overall_code).toBe('OVER_LIMIT');
    } finally {
      rls.close();
    }
  });

  it('closes the decision and Envoy listeners on close', async () => {
    t = await startGateway(join(dir, 'both.yaml'), { yaml: `${TIERS}decision:\n  port: 0\n${ENVOY}` });
    const base = t.gateway.decisionUrl as string;
    expect(base).toBeDefined();
    await t.gateway.close();
    await expect(send(agent, `${base}/decide`, { headers: { 'x-original-uri': '/x' } })).rejects.toThrow();
  });

  it('refuses an upgrade whose target is not a path, as the request path does', async () => {
    t = await startGateway(join(dir, 'upgrade.yaml'), {
      yaml: `${TIERS}upstream:\n  url: ${upstream.url}\n`,
    });
    const { host } = new URL(t.gateway.url);
    const head = `GET http://${host}/socket HTTP/1.1\r\nhost: ${host}\r\nx-request-id: up-1\r\n`;
    const plain = await rawExchange(t.gateway.url, `${head}connection: close\r\n\r\n`);
    const upgrade = await rawExchange(
      t.gateway.url,
      `${head}connection: upgrade\r\nupgrade: websocket\r\nsec-websocket-version: 13\r\n` +
        'sec-websocket-key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n',
    );
    const body = (answer: string) => JSON.parse(answer.slice(answer.indexOf('\r\n\r\n') + 4));
    for (const answer of [plain, upgrade]) {
      expect(answer.split('\r\n')[0]).toBe('HTTP/1.1 400 Bad Request');
      expect(answer.toLowerCase()).toContain('x-request-id: up-1\r\n');
    }
    expect(body(upgrade)).toEqual(body(plain));
    expect(upstream.seen.some((r) => r.headers.upgrade !== undefined)).toBe(false);
  });

  it('answers headers past the size limit with 431, malformed ones with 400', async () => {
    t = await startGateway(join(dir, 'big.yaml'), { yaml: `${TIERS}upstream:\n  url: ${upstream.url}\n` });
    const { host } = new URL(t.gateway.url);
    const big = await rawExchange(
      t.gateway.url,
      `GET /x HTTP/1.1\r\nhost: ${host}\r\nauthorization: Bearer ${'a'.repeat(20_000)}\r\n\r\n`,
    );
    expect(big.split('\r\n')[0]).toBe('HTTP/1.1 431 Request Header Fields Too Large');
    const bad = await rawExchange(t.gateway.url, `GET /x HTTP/1.1\r\nhost: ${host}\r\nbad header\r\n\r\n`);
    expect(bad.split('\r\n')[0]).toBe('HTTP/1.1 400 Bad Request');
  });

  it('serves a request offering an upgrade to HTTP/2 over cleartext as the HTTP/1.1 request it also is', async () => {
    // What `curl --http2` sends to an http:// URL: it was a 502 ("bad upgrade"), the upstream was never asked.
    t = await startGateway(join(dir, 'h2c.yaml'), {
      yaml: `${TIERS}upstream:\n  url: ${upstream.url}\n`,
    });
    const { host } = new URL(t.gateway.url);
    const answer = await rawExchange(
      t.gateway.url,
      `GET /h2c?x=1 HTTP/1.1\r\nhost: ${host}\r\nconnection: Upgrade, HTTP2-Settings, close\r\n` +
        'upgrade: h2c\r\nhttp2-settings: AAMAAABkAAQCAAAAAAIAAAAA\r\n\r\n',
    );
    expect(answer.split('\r\n')[0]).toBe('HTTP/1.1 200 OK');
    expect(answer.toLowerCase()).toContain('ratelimit-policy:');
    const seen = upstream.seen.find((r) => r.url === '/h2c?x=1');
    expect(seen).toBeDefined();
    // The upgrade and the fields the Connection header names stay on this hop.
    expect(seen?.headers.upgrade).toBeUndefined();
    expect(seen?.headers['http2-settings']).toBeUndefined();
  });

  it('reports every setting bound at start as needing a restart, reload.watch included', async () => {
    t = await startGateway(join(dir, 'reload.yaml'), { yaml: `${TIERS}reload:\n  watch: false\n` });
    writeFileSync(t.file, `${TIERS}reload:\n  watch: true\nlogging:\n  level: debug\n`);
    const result = await t.gateway.reload();
    expect(result).toEqual({ ok: true, violations: [], restartRequired: ['logging.level', 'reload.watch'] });
  });
});
