import { request as httpRequest, type IncomingMessage } from 'node:http';
import { connect, createServer } from 'node:net';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { WebSocket, WebSocketServer } from 'ws';
import {
  client,
  echo,
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
let running: TestGateway | undefined;

const TIERS = `rateLimiting:
  defaultTier: free
  tiers:
    free: { requestsPerMinute: 60, burstLimit: 3 }
`;

beforeAll(async () => {
  upstream = await startUpstream();
});
afterAll(async () => {
  await upstream.close();
  await agent.close();
  tmp.cleanup();
});
afterEach(async () => {
  upstream.handler = echo;
  await running?.gateway.close();
  running = undefined;
});

async function start(extra = '', upstreamUrl = upstream.url): Promise<string> {
  running = await startGateway(join(tmp.dir, 'gw.yaml'), {
    yaml: TIERS + extra,
    overrides: { upstream: upstreamUrl },
  });
  return running.gateway.url;
}

/** A raw node:http request, for headers undici refuses to send (Connection tokens). */
function rawRequest(
  url: string,
  headers: Record<string, string>,
): Promise<{ res: IncomingMessage; body: string }> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(url, { headers, agent: false }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => {
        body += c;
      });
      res.on('end', () => resolve({ res, body }));
    });
    req.on('error', reject);
    req.end();
  });
}

/**
 * Sends a request byte for byte on a raw TCP socket (no client library sends two Host fields) and resolves with
 * everything the gateway answered until it closed the connection.
 */
function rawExchange(url: string, text: string): Promise<string> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve, reject) => {
    const socket = connect(Number(port), hostname, () => socket.write(text));
    let answer = '';
    socket.setEncoding('utf8');
    socket.on('data', (c: string) => {
      answer += c;
    });
    socket.on('end', () => resolve(answer));
    socket.on('error', reject);
  });
}

/** The status line, the lower-cased header block and the parsed JSON body of a raw answer. */
function parseAnswer(answer: string): { status: string; head: string; body: unknown } {
  const end = answer.indexOf('\r\n\r\n');
  // Every header line ends in CRLF here, the last one too, so a test can look for `name: value\r\n`.
  const head = answer.slice(0, end + 2).toLowerCase();
  return { status: answer.split('\r\n')[0] ?? '', head, body: JSON.parse(answer.slice(end + 4)) };
}

describe('forwarding', () => {
  it('removes hop-by-hop headers both ways and sets X-Forwarded-For and Forwarded', async () => {
    const base = await start();
    upstream.handler = (req, res) => {
      req.resume();
      res.writeHead(200, {
        connection: 'x-hop',
        'x-hop': 'secret',
        'x-upstream': 'yes',
        'content-type': 'text/plain',
      });
      res.end(JSON.stringify(req.headers));
    };
    const { res, body } = await rawRequest(`${base}/p?q=1`, {
      connection: 'keep-alive, x-private',
      'x-private': 'drop me',
      te: 'trailers',
      'proxy-authorization': 'Basic abc',
      'x-forwarded-for': '192.0.2.1',
      forwarded: 'for=192.0.2.1;proto=https',
      'x-forwarded-proto': 'https',
      'x-request-id': 'abc-123',
    });
    const seen = JSON.parse(body) as Record<string, string>;
    expect(seen['x-private']).toBeUndefined();
    expect(seen['proxy-authorization']).toBeUndefined();
    expect(seen.te).toBeUndefined();
    // The client is no trusted proxy: the chain it claims is dropped, not passed on with the peer appended, so
    // an upstream that reads the first address of either field reads the peer.
    expect(seen['x-forwarded-for']).toBe('127.0.0.1');
    const port = new URL(base).port;
    expect(seen.forwarded).toBe(`for=127.0.0.1;proto=http;host="127.0.0.1:${port}"`);
    // The client's own X-Forwarded-Proto is replaced: it is no trusted proxy.
    expect(seen['x-forwarded-proto']).toBe('http');
    expect(seen['x-forwarded-host']).toBe(`127.0.0.1:${port}`);
    expect(seen['x-request-id']).toBe('abc-123');
    expect(seen.host).toBe(new URL(upstream.url).host);
    expect(res.headers['x-hop']).toBeUndefined();
    expect(res.headers['x-upstream']).toBe('yes');
    expect(res.headers['x-request-id']).toBe('abc-123');
    expect(res.headers.ratelimit).toBe('"free";r=2;t=1');
  });

  // Every spelling a CGI-style upstream (PHP, WSGI, Rack) reads as one of the forwarding fields: `X_Real_IP` is
  // HTTP_X_REAL_IP there, as `X-Real-IP` is.
  const LOOK_ALIKES: Record<string, string> = {
    X_Real_IP: '6.6.6.6',
    X_Original_URL: '/admin',
    X_Rewrite_URL: '/admin',
    X_Forwarded_Host: 'evil.example',
    X_Forwarded_Proto: 'https',
    X_Forwarded_For: '6.6.6.6',
    'X-forwarded_for': '6.6.6.7',
    'x-Forwarded-For_': 'not a forwarding field',
  };

  it.each([
    ['an untrusted client', ''],
    ['a trusted proxy', 'server: { trustedProxies: [loopback] }\n'],
  ])('never forwards another spelling of a forwarding field from %s', async (_who, trust) => {
    const base = await start(trust);
    const { res, body } = await rawRequest(`${base}/p`, {
      ...LOOK_ALIKES,
      forwarded: 'for=192.0.2.1',
      'x-real-ip': '192.0.2.1',
      'x-original-url': '/system',
    });
    expect(res.statusCode).toBe(200);
    const seen = (JSON.parse(body) as { headers: Record<string, string> }).headers;
    const port = new URL(base).port;
    const spelled = Object.keys(seen).filter((n) => n.includes('_') && n !== 'x-forwarded-for_');
    expect(spelled).toEqual([]);
    expect(seen['x-forwarded-for_']).toBe('not a forwarding field');
    expect(seen['x-forwarded-for']).toBe('127.0.0.1');
    // A trusted proxy's chain is appended to; a client's own is replaced.
    expect(seen.forwarded).toBe(
      `${trust === '' ? '' : 'for=192.0.2.1, '}for=127.0.0.1;proto=http;host="127.0.0.1:${port}"`,
    );
    expect(seen['x-forwarded-proto']).toBe('http');
    expect(seen['x-forwarded-host']).toBe(`127.0.0.1:${port}`);
    // X-Real-IP is the client the gateway keyed: here the peer, since the proxy's X-Forwarded-For names no hop.
    expect(seen['x-real-ip']).toBe('127.0.0.1');
    // A trusted proxy's own X-Original-URL stands; a client's is dropped.
    expect(seen['x-original-url']).toBe(trust === '' ? undefined : '/system');
  });

  it.each<[string, string, Record<string, string>, string]>([
    ['x-forwarded-for', '', { 'x-forwarded-for': '1.1.1.1, 5.5.5.5' }, '5.5.5.5'],
    // X-Forwarded-For is not the configured header here: not read, and not what X-Real-IP says.
    [
      'forwarded',
      'proxyHeader: forwarded, ',
      { forwarded: 'for=1.1.1.1, for=5.5.5.6', 'x-forwarded-for': '9.9.9.9' },
      '5.5.5.6',
    ],
  ])(
    "sends X-Real-IP as the client resolved from a trusted proxy's %s, not the X-Real-IP it passed on",
    async (_header, option, sent, client) => {
      // AWS ALB and most CDNs write X-Forwarded-For only, and pass their client's own X-Real-IP through.
      const base = await start(`server: { ${option}trustedProxies: [loopback] }\n`);
      const { res, body } = await rawRequest(`${base}/p`, { ...sent, 'x-real-ip': '3.3.3.3' });
      expect(res.statusCode).toBe(200);
      expect((JSON.parse(body) as { headers: Record<string, string> }).headers['x-real-ip']).toBe(client);
    },
  );

  // Spring, ASP.NET and Werkzeug build redirects and links from the port and prefix fields, Rack reads
  // X-Forwarded-Ssl before X-Forwarded-Proto, and client address libraries read the CDN fields before the rest.
  const PROXY_ONLY: Record<string, string> = {
    'X-Forwarded-Port': '8443',
    'X-Forwarded-Prefix': '/evil',
    'X-Forwarded-Server': 'evil.example',
    'X-Forwarded-Ssl': 'on',
    'X-Forwarded-Scheme': 'https',
    'Client-IP': '6.6.6.1',
    'X-Client-IP': '6.6.6.2',
    'True-Client-IP': '6.6.6.3',
    'CF-Connecting-IP': '6.6.6.4',
    'Fastly-Client-IP': '6.6.6.5',
    'X-Cluster-Client-IP': '6.6.6.6',
  };
  // lighttpd and older Apache CGI read every character but letters and digits as `_`.
  const OTHER_SPELLINGS: Record<string, string> = {
    'X.Real.IP': '6.6.6.7',
    'X.Forwarded.Prefix': '/evil',
    True_Client_IP: '6.6.6.8',
    'cf.connecting.ip': '6.6.6.9',
    'X-Forwarded~Port': '8443',
  };

  it.each([
    ['an untrusted client', ''],
    ['a trusted proxy', 'server: { trustedProxies: [loopback] }\n'],
  ])(
    'forwards the port, prefix, scheme and CDN client fields from %s only if trusted, other spellings never',
    async (_who, trust) => {
      const base = await start(trust);
      const { res, body } = await rawRequest(`${base}/p`, { ...PROXY_ONLY, ...OTHER_SPELLINGS });
      expect(res.statusCode).toBe(200);
      const seen = (JSON.parse(body) as { headers: Record<string, string> }).headers;
      for (const [name, value] of Object.entries(PROXY_ONLY))
        expect(seen[name.toLowerCase()], name).toBe(trust === '' ? undefined : value);
      for (const name of Object.keys(OTHER_SPELLINGS)) expect(seen[name.toLowerCase()], name).toBeUndefined();
      expect(seen['x-real-ip']).toBe('127.0.0.1');
    },
  );

  it('prefixes the upstream base path and keeps the query', async () => {
    const base = await start('', `${upstream.url}/base/`);
    const r = await send(agent, `${base}/a/b?c=d&e`);
    expect(r.json()).toMatchObject({ url: '/base/a/b?c=d&e' });
  });
});

describe('malformed input', () => {
  it('never crashes on odd forwarding, identity or id headers', async () => {
    const base = await start('server: { trustedProxies: [loopback] }\nidentity:\n  headers: {}\n');
    const odd: Record<string, string>[] = [
      { 'x-forwarded-for': 'not-an-ip, , ::::, 999.1.1.1' },
      { 'x-forwarded-for': `${'1.2.3.4, '.repeat(500)}5.6.7.8` },
      { forwarded: 'for="[::1', 'x-request-id': '"><script>' },
      { 'x-rate-limit-tier': 'no-such-tier' },
    ];
    for (const headers of odd) {
      const r = await send(agent, `${base}/odd`, { headers });
      expect([200, 429]).toContain(r.status);
    }
    // An identity value too long to name a caller from a trusted proxy is refused, not keyed by the address.
    const long = await send(agent, `${base}/odd`, {
      headers: { 'x-tenant-id': 'a'.repeat(4000), 'x-client-id': 'c\u00e9' },
    });
    expect(long.status).toBe(400);
    expect(long.json<{ code: string }>().code).toBe('invalid_identity_header');
    expect((await send(agent, `${base}/health`)).status).toBe(200);
  });
});

describe('upstream failures', () => {
  it('answers 502 problem when the upstream is down', async () => {
    const port = await new Promise<number>((resolve) => {
      const s = createServer();
      s.listen(0, '127.0.0.1', () => {
        const p = (s.address() as { port: number }).port;
        s.close(() => resolve(p));
      });
    });
    const base = await start('', `http://127.0.0.1:${port}`);
    const r = await send(agent, `${base}/x`, { headers: { 'x-request-id': 'down-1' } });
    expect(r.status).toBe(502);
    expect(r.headers['content-type']).toBe('application/problem+json');
    expect(r.json()).toEqual({
      type: 'about:blank',
      title: 'Bad Gateway',
      status: 502,
      detail: 'The upstream service could not be reached.',
      instance: '/x',
      code: 'upstream_unreachable',
      correlation_id: 'down-1',
    });
    expect(r.headers.ratelimit).toBe('"free";r=2;t=1');
  });

  it('answers 504 problem when the upstream sends no response headers in time', async () => {
    const base = await start('upstream: { responseTimeout: 200ms }\n');
    upstream.handler = () => undefined; // never answers
    const r = await send(agent, `${base}/slow`);
    expect(r.status).toBe(504);
    expect(r.json()).toMatchObject({ status: 504, code: 'upstream_timeout', instance: '/slow' });
    expect(r.json()).toHaveProperty('correlation_id');
    expect(r.json()).not.toHaveProperty('requestId');
    upstream.server.closeAllConnections();
  });
});

describe('Host header (RFC 9112 3.2)', () => {
  const UPGRADE =
    'connection: upgrade\r\nupgrade: websocket\r\nsec-websocket-version: 13\r\n' +
    'sec-websocket-key: dGhlIHNhbXBsZSBub25jZQ==\r\n';

  it('refuses a request with two Host fields with a 400 bad_host problem, plain and upgrade alike', async () => {
    const base = await start();
    const head = 'GET /api/x HTTP/1.1\r\nHost: a\r\nHost: b\r\nx-request-id: host-1\r\n';
    const plain = parseAnswer(await rawExchange(base, `${head}\r\n`));
    const upgrade = parseAnswer(await rawExchange(base, `${head}${UPGRADE}\r\n`));
    for (const a of [plain, upgrade]) {
      expect(a.status).toBe('HTTP/1.1 400 Bad Request');
      expect(a.head).toContain('content-type: application/problem+json\r\n');
      expect(a.head).toContain('x-request-id: host-1\r\n');
      expect(a.head).toContain('connection: close\r\n');
      expect(a.body).toEqual({
        type: 'about:blank',
        title: 'Bad Request',
        status: 400,
        detail: 'The request must have exactly one Host header field with a valid host and optional port.',
        instance: '/api/x',
        code: 'bad_host',
        correlation_id: 'host-1',
      });
    }
    expect(upstream.seen.some((r) => r.url === '/api/x')).toBe(false);
  });

  it('refuses two Host fields whatever their case, on the health endpoints too', async () => {
    const base = await start();
    for (const target of ['/api/y', '/health']) {
      const answer = await rawExchange(base, `GET ${target} HTTP/1.1\r\nhost: a\r\nHOST: a\r\n\r\n`);
      expect(parseAnswer(answer)).toMatchObject({
        status: 'HTTP/1.1 400 Bad Request',
        body: { code: 'bad_host' },
      });
    }
    expect(upstream.seen.some((r) => r.url === '/api/y')).toBe(false);
  });

  it('refuses a Host that is not a host and optional port, and passes valid ones', async () => {
    const base = await start();
    for (const host of ['a/b', 'user@a', 'a:80x', 'a:1:2', '[::1', '[::1]x', 'a"b']) {
      const answer = await rawExchange(base, `GET /h HTTP/1.1\r\nhost: ${host}\r\nconnection: close\r\n\r\n`);
      expect(parseAnswer(answer), host).toMatchObject({ body: { code: 'bad_host' } });
    }
    for (const host of ['example.com', 'example.com:8080', '[::1]:80', '[::1]', '127.0.0.1:1', 'a_b-c~d']) {
      // The health endpoint: answered by the gateway, never limited, after the Host check like every request.
      const answer = await rawExchange(
        base,
        `GET /health HTTP/1.1\r\nhost: ${host}\r\nconnection: close\r\n\r\n`,
      );
      expect(answer.split('\r\n')[0], host).toBe('HTTP/1.1 200 OK');
    }
  });
});

describe('bodies', () => {
  it('streams a large body both ways without buffering it whole', async () => {
    const base = await start('server: { maxBodySize: 64mb }\n');
    upstream.handler = (req, res) => {
      res.writeHead(200, { 'content-type': 'application/octet-stream' });
      res.flushHeaders();
      req.on('data', (c: Buffer) => res.write(c));
      req.on('end', () => res.end());
    };
    const chunk = Buffer.alloc(1024 * 1024, 7);
    const rounds = 16;
    // Each chunk is sent only after the previous one came back through the gateway: impossible if the gateway
    // (or undici) waited for the whole request body before forwarding, or for the whole response before sending.
    const received = await new Promise<number>((resolve, reject) => {
      const req = httpRequest(
        `${base}/stream`,
        { method: 'POST', agent: false, headers: { 'transfer-encoding': 'chunked' } },
        (res) => {
          let total = 0;
          let sent = 1;
          res.on('data', (c: Buffer) => {
            total += c.length;
            if (total === sent * chunk.length) {
              if (sent === rounds) req.end();
              else {
                sent++;
                req.write(chunk);
              }
            }
          });
          res.on('end', () => resolve(total));
          res.on('error', reject);
        },
      );
      req.on('error', reject);
      req.flushHeaders();
      req.write(chunk);
    });
    expect(received).toBe(rounds * chunk.length);
  });

  it('refuses bodies over the size limit with 413, by Content-Length and while streaming', async () => {
    const base = await start('server: { maxBodySize: 1kb }\n');
    const big = await send(agent, `${base}/up`, { method: 'POST', body: Buffer.alloc(2048) });
    expect(big.status).toBe(413);
    expect(big.json()).toMatchObject({
      code: 'body_too_large',
      detail: 'The request body is larger than 1024 bytes.',
    });
    const seenBefore = upstream.seen.length;
    const chunked = await new Promise<number>((resolve, reject) => {
      const req = httpRequest(
        `${base}/up`,
        { method: 'POST', agent: false, headers: { 'transfer-encoding': 'chunked' } },
        (res) => {
          res.resume();
          resolve(res.statusCode ?? 0);
        },
      );
      req.on('error', reject);
      req.write(Buffer.alloc(800));
      req.write(Buffer.alloc(800));
      req.end();
    });
    expect(chunked).toBe(413);
    expect(upstream.seen.length - seenBefore).toBeLessThanOrEqual(1);
    const ok = await send(agent, `${base}/up`, { method: 'POST', body: Buffer.alloc(1024) });
    expect(ok.json()).toMatchObject({ bytes: 1024 });
  });
});

describe('WebSocket', () => {
  it('passes upgrades through and limits them at connect', async () => {
    const wss = new WebSocketServer({ server: upstream.server });
    wss.on('connection', (ws, req) => {
      ws.send(`hello ${req.headers['x-forwarded-for']}`);
      ws.on('message', (m) => ws.send(`echo:${m.toString()}`));
    });
    try {
      const base = (await start()).replace('http', 'ws');
      const open = () =>
        new Promise<{ ws: WebSocket; first: string; headers: Record<string, unknown> }>((resolve, reject) => {
          const ws = new WebSocket(`${base}/socket?room=1`);
          let headers: Record<string, unknown> = {};
          ws.once('upgrade', (res) => {
            headers = res.headers;
          });
          ws.once('message', (m) => resolve({ ws, first: m.toString(), headers }));
          ws.once('unexpected-response', (_req, res) =>
            reject(Object.assign(new Error('refused'), { status: res.statusCode, headers: res.headers })),
          );
          ws.once('error', reject);
        });
      const a = await open();
      expect(a.first).toBe('hello 127.0.0.1');
      expect(a.headers.ratelimit).toBe('"free";r=2;t=1');
      const reply = await new Promise<string>((resolve) => {
        a.ws.once('message', (m) => resolve(m.toString()));
        a.ws.send('ping');
      });
      expect(reply).toBe('echo:ping');
      // Messages on an open socket are not limited; connections are.
      for (let i = 0; i < 10; i++) a.ws.send(`m${i}`);
      const b = await open();
      const c = await open();
      const refused = await open().catch((e: { status: number; headers: Record<string, string> }) => e);
      expect(refused).toMatchObject({ status: 429 });
      expect((refused as { headers: Record<string, string> }).headers['retry-after']).toBe('1');
      for (const s of [a, b, c]) s.ws.close();
    } finally {
      for (const ws of wss.clients) ws.terminate();
      wss.close();
    }
  });

  it("hands the upstream's refusal of an upgrade (401, 426) to the client, body and headers, with the rate-limit headers", async () => {
    const refusals = new Map<string, { status: number; body: string; headers: Record<string, string> }>([
      [
        '/socket/private',
        {
          status: 401,
          body: '{"error":"login first"}',
          headers: { 'content-type': 'application/json', 'www-authenticate': 'Bearer realm="chat"' },
        },
      ],
      ['/socket/old', { status: 426, body: 'use v2\n', headers: { 'content-type': 'text/plain' } }],
    ]);
    // A plain HTTP server answers the upgrade request without switching (its `upgrade` event unhandled, Node.js
    // serves such a request through `request`).
    upstream.handler = (req, res) => {
      const r = refusals.get(req.url ?? '');
      if (r === undefined) {
        res.writeHead(404).end();
        return;
      }
      // A chunked body: the gateway must frame what it passes on itself.
      res.writeHead(r.status, { ...r.headers, 'x-upstream': 'yes' });
      res.write(r.body.slice(0, 3));
      res.end(r.body.slice(3));
    };
    const base = (await start()).replace('http', 'ws');
    const refused = (path: string) =>
      new Promise<{ status: number; headers: Record<string, unknown>; body: string }>((resolve, reject) => {
        const ws = new WebSocket(`${base}${path}`);
        ws.once('unexpected-response', (_req, res) => {
          let body = '';
          res.setEncoding('utf8');
          res.on('data', (c: string) => {
            body += c;
          });
          res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body }));
        });
        ws.once('open', () => reject(new Error('the upgrade was accepted')));
        ws.once('error', reject);
      });
    const a = await refused('/socket/private');
    expect(a.status).toBe(401);
    expect(a.body).toBe('{"error":"login first"}');
    expect(a.headers).toMatchObject({
      'content-type': 'application/json',
      'www-authenticate': 'Bearer realm="chat"',
      'x-upstream': 'yes',
      ratelimit: '"free";r=2;t=1',
      connection: 'close',
    });
    const b = await refused('/socket/old');
    expect(b).toMatchObject({ status: 426, body: 'use v2\n' });
    expect(b.headers.ratelimit).toBe('"free";r=1;t=2');
  });
});
