import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { loadConfigText } from '../src/config/load-config.js';
import {
  client,
  send,
  startGateway,
  startUpstream,
  type TestGateway,
  type TestUpstream,
  tempDir,
} from './support.js';

const tmp = tempDir();
let upstream: TestUpstream;
let running: TestGateway | undefined;
const agent = client();

const CONSOLE = 'http://console.example.test:5173';
const RATE_LIMIT_HEADERS = [
  'ratelimit',
  'ratelimit-policy',
  'retry-after',
  'x-ratelimit-limit',
  'x-ratelimit-remaining',
  'x-ratelimit-reset',
  'x-ratelimit-policy',
];

const yaml = (cors: string) => `rateLimiting:
  defaultTier: free
  tiers:
    free: { requestsPerMinute: 60, burstLimit: 2 }
${cors}`;

beforeAll(async () => {
  upstream = await startUpstream();
});
afterAll(async () => {
  await upstream.close();
  await agent.close();
  tmp.cleanup();
});
afterEach(async () => {
  await running?.gateway.close();
  running = undefined;
});

async function start(cors: string): Promise<string> {
  running = await startGateway(join(tmp.dir, 'cors.yaml'), {
    yaml: yaml(cors),
    overrides: { upstream: upstream.url },
  });
  return running.gateway.url;
}

function exposed(value: string | string[] | undefined): string[] {
  return String(value ?? '')
    .split(',')
    .map((s) => s.trim().toLowerCase())
    .filter((s) => s !== '');
}

describe('cors: section', () => {
  it('answers a preflight itself, without counting it and without the upstream', async () => {
    const url = await start(`cors:\n  allowedOrigins: ["${CONSOLE}"]\n  credentials: true\n  maxAge: 5m\n`);
    const before = upstream.seen.length;
    for (let i = 0; i < 4; i++) {
      const r = await send(agent, `${url}/api/items`, {
        method: 'OPTIONS',
        headers: {
          origin: CONSOLE,
          'access-control-request-method': 'POST',
          'access-control-request-headers': 'content-type, idempotency-key',
        },
      });
      expect(r.status).toBe(204);
      expect(r.headers['access-control-allow-origin']).toBe(CONSOLE);
      expect(r.headers['access-control-allow-credentials']).toBe('true');
      expect(String(r.headers['access-control-allow-methods'])).toContain('POST');
      expect(r.headers['access-control-allow-headers']).toBe('content-type, idempotency-key');
      expect(r.headers['access-control-max-age']).toBe('300');
      expect(String(r.headers.vary).toLowerCase()).toContain('origin');
    }
    expect(upstream.seen.length).toBe(before);
    // Four preflights took nothing: the burst of 2 still admits two requests.
    const first = await send(agent, `${url}/api/items`, { headers: { origin: CONSOLE } });
    expect(first.status).toBe(200);
  });

  it('exposes the rate-limit headers on a proxied answer and on a 429', async () => {
    const url = await start(`cors:\n  allowedOrigins: ["${CONSOLE}"]\n  exposedHeaders: [X-Total-Count]\n`);
    upstream.handler = (_req, res) => {
      // An upstream with CORS of its own: the gateway's section wins, one value per field.
      res.writeHead(200, { 'access-control-allow-origin': '*', 'content-type': 'text/plain' });
      res.end('ok');
    };
    try {
      const replies = [];
      for (let i = 0; i < 3; i++)
        replies.push(await send(agent, `${url}/x`, { headers: { origin: CONSOLE } }));
      expect(replies.map((r) => r.status)).toEqual([200, 200, 429]);
      for (const r of replies) {
        expect(r.headers['access-control-allow-origin']).toBe(CONSOLE);
        expect(r.headers['access-control-allow-credentials']).toBeUndefined();
        const names = exposed(r.headers['access-control-expose-headers']);
        for (const h of [...RATE_LIMIT_HEADERS, 'x-request-id', 'x-total-count']) expect(names).toContain(h);
      }
      expect(replies[2].headers['retry-after']).toBeDefined();
    } finally {
      upstream.handler = (await import('./support.js')).echo;
    }
  });

  it('gives an origin not allowed no CORS field, and a request without Origin none either', async () => {
    const url = await start(`cors:\n  allowedOrigins: ["${CONSOLE}"]\n`);
    const other = await send(agent, `${url}/x`, { headers: { origin: 'http://evil.example.test' } });
    expect(other.status).toBe(200);
    expect(other.headers['access-control-allow-origin']).toBeUndefined();
    const preflight = await send(agent, `${url}/x`, {
      method: 'OPTIONS',
      headers: { origin: 'http://evil.example.test', 'access-control-request-method': 'GET' },
    });
    expect(preflight.status).toBe(204);
    expect(preflight.headers['access-control-allow-origin']).toBeUndefined();
    const plain = await send(agent, `${url}/x`);
    expect(plain.headers['access-control-allow-origin']).toBeUndefined();
    expect(plain.headers['access-control-expose-headers']).toBeUndefined();
  });

  it('answers any origin with "*" and no credentials', async () => {
    const url = await start('cors:\n  allowedOrigins: ["*"]\n');
    const r = await send(agent, `${url}/x`, { headers: { origin: 'http://anywhere.test' } });
    expect(r.headers['access-control-allow-origin']).toBe('*');
  });

  it('refuses credentials with "*" and an origin with a path, naming the field', () => {
    const star = loadConfigText(yaml('cors:\n  allowedOrigins: ["*"]\n  credentials: true\n'), undefined);
    expect(star.ok).toBe(false);
    if (!star.ok) expect(JSON.stringify(star.violations)).toContain('credentials');
    const path = loadConfigText(yaml('cors:\n  allowedOrigins: ["http://a.test/app"]\n'), undefined);
    expect(path.ok).toBe(false);
    if (!path.ok) expect(JSON.stringify(path.violations)).toContain('allowedOrigins');
  });
});
