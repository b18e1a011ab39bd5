import { writeFileSync } from 'node:fs';
import { connect } from 'node:net';
import { join } from 'node:path';
import type { Agent } from 'undici';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { loadConfigText } from '../src/config/load-config.js';
import {
  client,
  decisionEndpoint,
  send,
  startGateway,
  startUpstream,
  type TestGateway,
  type TestUpstream,
  tempDir,
} from './support.js';

const BASE = `rateLimiting:
  defaultTier: free
  tiers:
    free:
      requestsPerMinute: 60
      burstLimit: 3
    gold:
      requestsPerMinute: 600
      burstLimit: 20
    internal:
      unlimited: true
  endpoints:
    - pattern: "/api/risk/simulation/studio/*"
      methods: [POST]
      limit: 2
      window: 60s
headers:
  mode: both
identity:
  headers: {}
server:
  trustedProxies: [loopback]
`;

describe('decision API (HTTP, for NGINX auth_request)', () => {
  const { dir, cleanup } = tempDir();
  let upstream: TestUpstream;
  let agent: Agent;
  let t: TestGateway | undefined;

  beforeAll(async () => {
    upstream = await startUpstream();
    agent = client();
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

  async function start(extra = 'decision:\n  port: 0\n'): Promise<string> {
    t = await startGateway(join(dir, 'rl.yaml'), {
      yaml: `${BASE}upstream:\n  url: ${upstream.url}\n${extra}`,
    });
    return decisionEndpoint(t.gateway);
  }

  const ask = (url: string, headers: Record<string, string>) => send(agent, url, { headers });

  it('allows with the RateLimit headers, then denies with 429, Retry-After and the problem body', async () => {
    const url = await start();
    const h = { 'x-original-uri': '/api/things?q=1', 'x-original-method': 'GET', 'x-real-ip': '203.0.113.9' };
    const first = await ask(url, h);
    expect(first.status).toBe(200);
    expect(first.text).toBe('');
    expect(first.headers['ratelimit-policy']).toBe('"free";q=60;w=60');
    expect(first.headers.ratelimit).toBe('"free";r=2;t=1');
    expect(first.headers['x-ratelimit-remaining']).toBe('2');
    expect(first.headers['retry-after']).toBeUndefined();
    await ask(url, h);
    await ask(url, h);
    const denied = await ask(url, { ...h, 'x-request-id': 'req-42' });
    expect(denied.status).toBe(429);
    expect(denied.headers['content-type']).toBe('application/problem+json');
    expect(denied.headers['retry-after']).toBe('1');
    expect(denied.headers.ratelimit).toBe('"free";r=0;t=3');
    const body = denied.json();
    expect(body).toMatchObject({
      status: 429,
      code: 'rate_limited',
      instance: '/api/things',
      limit: 60,
      remaining: 0,
      retryAfter: 1,
      'violated-policies': ['free'],
      correlation_id: 'req-42',
    });
    // NGINX discards the body of an auth_request answer: the same JSON rides in a header on one line.
    expect(JSON.parse(denied.headers['x-ratelimit-problem'] as string)).toEqual(body);
    t?.clock.advance(1000);
    expect((await ask(url, h)).status).toBe(200);
  });

  it('keys by the original client address and matches endpoint rules by the original method and path', async () => {
    const url = await start();
    const post = { 'x-original-uri': '/api/risk/simulation/studio/run', 'x-original-method': 'POST' };
    const a = { ...post, 'x-real-ip': '198.51.100.1' };
    expect((await ask(url, a)).headers.ratelimit).toBe(
      '"free";r=2;t=1, "/api/risk/simulation/studio/*";r=1;t=30',
    );
    expect((await ask(url, a)).status).toBe(200);
    const third = await ask(url, a);
    expect(third.status).toBe(429);
    expect(third.json()['violated-policies']).toEqual(['/api/risk/simulation/studio/*']);
    // Another client has its own buckets; a GET is not under the POST rule.
    expect((await ask(url, { ...post, 'x-real-ip': '198.51.100.2' })).status).toBe(200);
    const get = await ask(url, { ...a, 'x-original-method': 'GET' });
    expect(get.status).toBe(200);
    expect(get.headers['ratelimit-policy']).toBe('"free";q=60;w=60');
  });

  it('takes the cost from X-RateLimit-Cost and rejects a malformed one', async () => {
    const url = await start();
    const h = { 'x-original-uri': '/x', 'x-real-ip': '192.0.2.7' };
    const r = await ask(url, { ...h, 'x-ratelimit-cost': '3' });
    expect(r.headers.ratelimit).toBe('"free";r=0;t=3');
    for (const bad of ['0', '-1', 'two', '99999999']) {
      const b = await ask(url, { ...h, 'x-ratelimit-cost': bad });
      expect(b.status).toBe(400);
      expect(b.json().code).toBe('bad_request');
    }
  });

  it('refuses a cost above the burst with the bucket as it is and no wait to advise', async () => {
    const url = await start();
    const over = await ask(url, {
      'x-original-uri': '/x',
      'x-real-ip': '192.0.2.8',
      'x-ratelimit-cost': '5',
    });
    expect(over.status).toBe(429);
    expect(over.json().code).toBe('cost_exceeds_burst');
    expect(over.json()).not.toHaveProperty('retryAfter');
    expect(over.json().remaining).toBe(3);
    expect(over.headers['retry-after']).toBeUndefined();
    expect(over.headers.ratelimit).toBe('"free";r=3;t=0');
  });

  it('answers 400 without the original URI, 404 off its path, and exempts the exempt endpoints', async () => {
    const url = await start();
    expect((await ask(url, { 'x-real-ip': '192.0.2.1' })).status).toBe(400);
    expect((await ask(url, { 'x-original-uri': 'no-slash' })).status).toBe(400);
    expect((await ask(url, { 'x-original-uri': '/x', 'x-original-method': 'G ET' })).status).toBe(400);
    expect((await ask(`${url}/other`, { 'x-original-uri': '/x' })).status).toBe(404);
    const health = await ask(url, { 'x-original-uri': '/health', 'x-original-method': 'GET' });
    expect(health.status).toBe(200);
    expect(health.headers.ratelimit).toBeUndefined();
  });

  it('falls back to the peer when the client address is missing or malformed', async () => {
    const url = await start();
    for (let i = 0; i < 3; i++) {
      const ip: Record<string, string> = i === 0 ? {} : { 'x-real-ip': i === 1 ? 'not-an-ip' : '127.0.0.1' };
      expect((await ask(url, { 'x-original-uri': '/x', ...ip })).status).toBe(200);
    }
    // All three were keyed as the peer (127.0.0.1): one bucket of burst 3.
    expect((await ask(url, { 'x-original-uri': '/x' })).status).toBe(429);
  });

  it('honours identity headers only when trustIdentityHeaders is on', async () => {
    const h = {
      'x-original-uri': '/x',
      'x-real-ip': '192.0.2.9',
      'x-tenant-id': 'acme',
      'x-client-id': 'ci',
      'x-rate-limit-tier': 'gold',
    };
    let url = await start();
    expect((await ask(url, h)).headers['ratelimit-policy']).toBe('"free";q=60;w=60');
    await t?.gateway.close();
    url = await start('decision:\n  port: 0\n  trustIdentityHeaders: true\n');
    expect((await ask(url, h)).headers['ratelimit-policy']).toBe('"gold";q=600;w=60');
    const internal = await ask(url, { ...h, 'x-rate-limit-tier': 'internal' });
    expect(internal.status).toBe(200);
    expect(internal.headers.ratelimit).toBeUndefined();
  });

  it('applies a reloaded decision section at once, except its address', async () => {
    const { writeFileSync } = await import('node:fs');
    const h = {
      'x-original-uri': '/x',
      'x-real-ip': '192.0.2.10',
      'x-tenant-id': 'acme',
      'x-client-id': 'ci',
      'x-rate-limit-tier': 'gold',
    };
    const url = await start();
    expect((await ask(url, h)).headers['ratelimit-policy']).toBe('"free";q=60;w=60');
    writeFileSync(
      t?.file as string,
      `${BASE}upstream:\n  url: ${upstream.url}\ndecision:\n  port: 1\n  trustIdentityHeaders: true\n`,
    );
    const result = await t?.gateway.reload();
    expect(result?.ok).toBe(true);
    expect(result?.restartRequired).toContain('decision.host/port');
    expect((await ask(url, h)).headers['ratelimit-policy']).toBe('"gold";q=600;w=60');
  });

  it('closes connections of peers outside allowedPeers before reading them, and answers 403 on one a reload excluded', async () => {
    const url = await start();
    const { port, pathname } = new URL(url);
    // A keep-alive connection opened while the peer was allowed, read answer by answer.
    const socket = connect(Number(port), '127.0.0.1');
    const answers: string[] = [];
    let waiting: (() => void) | undefined;
    socket.on('data', (d: Buffer) => {
      answers.push(d.toString('latin1'));
      waiting?.();
    });
    const next = (n: number) =>
      new Promise<string>((resolve) => {
        waiting = () => answers.length >= n && resolve(answers[n - 1] as string);
        socket.write(`GET ${pathname} HTTP/1.1\r\nhost: x\r\nx-original-uri: /x\r\n\r\n`);
      });
    try {
      expect(await next(1)).toMatch(/^HTTP\/1\.1 200 /);
      writeFileSync(
        t?.file as string,
        `${BASE}upstream:\n  url: ${upstream.url}\ndecision:\n  port: 0\n  allowedPeers: ["10.0.0.0/8"]\n`,
      );
      expect((await t?.gateway.reload())?.ok).toBe(true);
      const refused = await next(2);
      expect(refused).toMatch(/^HTTP\/1\.1 403 /);
      expect(refused).toContain('"code":"forbidden"');
    } finally {
      socket.destroy();
    }
    // A new connection is closed unread: the peer gets no answer at all.
    await expect(ask(url, { 'x-original-uri': '/x' })).rejects.toThrow();
    expect(t?.logs.lines.some((l) => String(l.msg).includes('decision.allowedPeers'))).toBe(true);
  });

  it('shares buckets with the proxy path: same client, same policies, same store', async () => {
    const url = await start();
    // Through the gateway the client is 127.0.0.1 (a trusted proxy without X-Forwarded-For): two requests.
    expect((await send(agent, `${t?.gateway.url}/x`)).status).toBe(200);
    expect((await send(agent, `${t?.gateway.url}/x`)).status).toBe(200);
    const r = await ask(url, { 'x-original-uri': '/x', 'x-real-ip': '127.0.0.1' });
    expect(r.headers.ratelimit).toBe('"free";r=0;t=3');
    expect((await send(agent, `${t?.gateway.url}/x`)).status).toBe(429);
  });

  it('records its decisions in the gateway metrics', async () => {
    const url = await start();
    await ask(url, { 'x-original-uri': '/x', 'x-real-ip': '192.0.2.50' });
    const text = await t?.gateway.metrics.metrics();
    expect(text).toMatch(/decisions_total\{[^}]*outcome="allowed"[^}]*\} 1/);
  });

  it('answers a store that cannot decide under failureMode closed with the 503 code docs/nginx.md and docs/errors.md name', async () => {
    // Port 1 on the loopback refuses every connection: the store never answers.
    const url = await start(
      'decision:\n  port: 0\nstore:\n  type: redis\n  url: "redis://127.0.0.1:1"\n  failureMode: closed\n',
    );
    let r = await ask(url, { 'x-original-uri': '/x', 'x-real-ip': '192.0.2.60' });
    for (let i = 0; i < 50 && r.status !== 503; i++) {
      r = await ask(url, { 'x-original-uri': '/x', 'x-real-ip': '192.0.2.60' });
    }
    expect(r.status).toBe(503);
    const code = (r.json() as { code: string }).code;
    expect(code).toBe('rate_limiter_unavailable');
    const { readFileSync } = await import('node:fs');
    const nginx = readFileSync(new URL('../../../docs/nginx.md', import.meta.url), 'utf8');
    expect(/^\| 503 \| [^|]+\| problem `([a-z_]+)` \|/m.exec(nginx)?.[1]).toBe(code);
    const errors = readFileSync(new URL('../../../docs/errors.md', import.meta.url), 'utf8');
    const besides = /Problem codes of the HTTP decision API \(besides ([^)]*)\)/.exec(errors)?.[1] ?? '';
    expect(besides).toContain(`\`${code}\``);
    expect(besides).not.toContain('`store_unavailable`');
  });
});

describe('decision: configuration', () => {
  const load = (extra: string) => loadConfigText(`${BASE}${extra}`, undefined, { env: {} });

  it('applies the defaults', () => {
    const r = load('decision: {}\n');
    expect(r.ok).toBe(true);
    expect(r.config?.decision).toEqual({
      host: '127.0.0.1',
      port: 8082,
      path: '/decide',
      allowedPeers: ['loopback'],
      maxConnections: 4096,
      trustIdentityHeaders: false,
      headers: {
        method: 'x-original-method',
        uri: 'x-original-uri',
        clientAddress: 'x-real-ip',
        cost: 'x-ratelimit-cost',
        problem: 'x-ratelimit-problem',
      },
    });
    expect(load('').config?.decision).toBeUndefined();
  });

  it('reports every violation with its path', () => {
    const r = load('decision:\n  allowedPeers: ["10.0.0.0/99"]\n  path: decide\n  prot: 1\n');
    expect(r.ok).toBe(false);
    const paths = r.violations.map((v) => v.path);
    expect(paths).toContain('decision.path');
    expect(paths).toContain('decision.prot');
    expect(r.violations.find((v) => v.path === 'decision.prot')?.message).toContain('did you mean "port"');
  });

  it('reports an invalid peer with its index', () => {
    const r = load('decision:\n  allowedPeers: [loopback, "10.0.0.0/99"]\n');
    expect(r.violations.map((v) => v.path)).toEqual(['decision.allowedPeers[1]']);
  });
});

describe('sluice serve in decision mode', () => {
  const { dir, cleanup } = tempDir();
  afterAll(cleanup);

  it('starts without an upstream when a decision section is configured, answers, and stops on SIGTERM', async () => {
    const { writeFileSync } = await import('node:fs');
    const { main } = await import('../src/cli/main.js');
    const { freePort } = await import('../../../test/support/redis-server.js');
    const [port, decisionPort] = [await freePort(), await freePort()];
    const file = join(dir, 'decide.yaml');
    writeFileSync(
      file,
      `${BASE}server:\n  port: ${port}\nlogging:\n  level: silent\ndecision:\n  port: ${decisionPort}\n`.replace(
        'server:\n  trustedProxies: [loopback]\n',
        '',
      ),
    );
    const handlers = new Map<string, () => void>();
    const changes: string[] = [];
    const errors: string[] = [];
    // One thread: a worker thread started from the test runner resolves `sluice/*` to the package's unbuilt dist.
    const exit = main(['serve', '--config', file, '--threads', '1'], {
      out: () => undefined,
      err: (e) => errors.push(e),
      onSignal: (signal, handler) => {
        handlers.set(signal, handler);
        changes.push(`on ${signal}`);
        return () => {
          handlers.delete(signal);
          changes.push(`off ${signal}`);
        };
      },
    });
    const agent = client();
    let r: Awaited<ReturnType<typeof send>> | undefined;
    // The command resolves only at shutdown: ask until the listener answers.
    while (r === undefined) {
      if (errors.length > 0) throw new Error(errors.join('\n'));
      r = await send(agent, `http://127.0.0.1:${decisionPort}/decide`, {
        headers: { 'x-original-uri': '/x', 'x-real-ip': '192.0.2.77' },
      }).catch(() => undefined);
    }
    expect(r.status).toBe(200);
    expect(r.headers['ratelimit-policy']).toBe('"free";q=60;w=60');
    // The handlers caught before the start are the ones that stop it: none was removed and added again (Node.js
    // can drop a signal it has taken but not delivered when its last listener goes).
    expect(changes).toEqual(['on SIGINT', 'on SIGTERM', 'on SIGHUP']);
    handlers.get('SIGTERM')?.();
    expect(await exit).toBe(0);
    await agent.close();
  });
});
