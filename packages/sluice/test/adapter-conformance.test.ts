/**
 * Adapter conformance: every behaviour of the HTTP layer, run over real sockets on 127.0.0.1 against node:http,
 * Express, Fastify and Hono. Each scenario builds four identical stacks (own ManualClock, MemoryStore and
 * HttpLimiter), sends the same requests to each, and asserts that status, rate-limit headers and problem body
 * are identical across adapters and as expected.
 */
import { connect } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { Limiter, ManualClock, type PolicyOptions } from '../src/core/index.js';
import { createHttpLimiter, type HttpLimiterOptions } from '../src/http/index.js';
import { MemoryStore } from '../src/memory/index.js';
import {
  ADAPTERS,
  type AdapterName,
  type Counters,
  type RunningApp,
  startApp,
} from './support/adapter-apps.js';

const POLICIES: PolicyOptions[] = [
  { name: 'rl.read', quota: 300, window: 60, burst: 3 },
  { name: 'rl.write', quota: 120, window: 60, burst: 2 },
  { name: 'rl.public_auth', quota: 10, window: 60, burst: 3 },
  { name: 'rl.webhook_in', quota: 60, window: 60, burst: 1 },
];
const EPOCH_MS = 1_701_936_000_000;

/** The headers the HTTP layer owns; framework headers (Date, X-Powered-By, ETag...) are not compared. */
const OWNED = [
  'ratelimit-policy',
  'ratelimit',
  'x-ratelimit-limit',
  'x-ratelimit-remaining',
  'x-ratelimit-reset',
  'x-ratelimit-policy',
  'retry-after',
];
/** Headers the HTTP layer sets on denials only (frameworks set some of them on their own responses too). */
const OWNED_ON_DENIAL = ['content-type', 'cache-control', 'x-content-type-options', 'x-request-id'];

interface Result {
  status: number;
  headers: Record<string, string>;
  /** The body of a denial (the problem); handler bodies differ by framework and are left out. */
  problem?: unknown;
}

interface Stack {
  adapter: AdapterName;
  app: RunningApp;
  clock: ManualClock;
}

const running: RunningApp[] = [];
afterEach(async () => {
  await Promise.all(running.splice(0).map((a) => a.close()));
});

async function stacks(options: Partial<HttpLimiterOptions> = {}): Promise<Stack[]> {
  return Promise.all(
    ADAPTERS.map(async (adapter) => {
      const clock = new ManualClock(0);
      const limiter = new Limiter({
        policies: POLICIES,
        store: new MemoryStore({ clock, sweepIntervalMs: 0 }),
      });
      const http = createHttpLimiter({
        limiter,
        rules: [
          { methods: 'GET', path: '/api/*', policies: ['rl.read'], key: 'principal' },
          { methods: 'POST', path: '/api/*', policies: ['rl.write'], key: 'principal' },
          { methods: 'POST', path: '/hooks/:webhook_id', policies: ['rl.webhook_in'], key: 'webhook' },
          { path: '/auth/*', policies: ['rl.public_auth'], key: 'ip' },
        ],
        publicAuth: { policy: 'rl.public_auth' },
        wallClock: () => EPOCH_MS + clock.now(),
        // The draft-11 fields alone, unless a scenario asks for the legacy ones too (the default sends both).
        headers: 'draft-11',
        ...options,
      });
      const app = await startApp(adapter, http);
      running.push(app);
      return { adapter, app, clock };
    }),
  );
}

async function send(
  stack: Stack,
  method: string,
  path: string,
  headers: Record<string, string> = {},
): Promise<Result> {
  const res = await fetch(`${stack.app.url}${path}`, { method, headers });
  const text = await res.text();
  const out: Record<string, string> = {};
  for (const name of OWNED) {
    const v = res.headers.get(name);
    if (v !== null) out[name] = v;
  }
  const result: Result = { status: res.status, headers: out };
  if (res.status === 429 || res.status === 503) {
    for (const name of OWNED_ON_DENIAL) {
      const v = res.headers.get(name);
      if (v !== null) out[name] = v;
    }
    result.problem = JSON.parse(text);
  }
  return result;
}

/**
 * Sends the same request to every stack and asserts identical results; returns the common result. A fixed
 * request id is sent unless the test gives one, so correlation ids compare equal.
 */
async function all(
  list: Stack[],
  method: string,
  path: string,
  headers: Record<string, string> = {},
): Promise<Result> {
  const h = { 'x-request-id': 'conformance', ...headers };
  const results = await Promise.all(list.map((s) => send(s, method, path, h)));
  for (let i = 1; i < results.length; i++) {
    expect({ adapter: list[i].adapter, ...results[i] }).toEqual({ adapter: list[i].adapter, ...results[0] });
  }
  return results[0];
}

const counters = (list: Stack[]): Counters[] => list.map((s) => ({ ...s.app.counters }));

describe('adapter conformance (node, express, fastify, hono)', () => {
  it('sends both headers on a 200 and a 404 of the same route, then a 429 problem after the burst', async () => {
    const s = await stacks();
    const ok = await all(s, 'GET', '/api/items/7');
    expect(ok).toEqual({
      status: 200,
      headers: { 'ratelimit-policy': '"rl.read";q=300;w=60', ratelimit: '"rl.read";r=2;t=1' },
    });
    const missing = await all(s, 'GET', '/api/items/8');
    expect(missing.status).toBe(404);
    expect(missing.headers).toEqual({
      'ratelimit-policy': '"rl.read";q=300;w=60',
      ratelimit: '"rl.read";r=1;t=1',
    });
    const unknownRoute = await all(s, 'GET', '/api/nothing/here');
    expect(unknownRoute.status).toBe(404);
    expect(unknownRoute.headers.ratelimit).toBe('"rl.read";r=0;t=1');
    const denied = await all(s, 'GET', '/api/items/7', { 'x-request-id': 'corr-1' });
    expect(denied).toEqual({
      status: 429,
      headers: {
        'ratelimit-policy': '"rl.read";q=300;w=60',
        ratelimit: '"rl.read";r=0;t=1',
        'retry-after': '1',
        'content-type': 'application/problem+json',
        'cache-control': 'no-store',
        'x-content-type-options': 'nosniff',
        'x-request-id': 'corr-1',
      },
      problem: {
        type: 'about:blank',
        title: 'Too Many Requests',
        status: 429,
        detail:
          'Rate limit "rl.read" exceeded: bursts of up to 3 requests, refilled at 300 per minute; retry in 1 s.',
        instance: '/api/items/7',
        code: 'rate_limited',
        limit: 300,
        remaining: 0,
        reset: 1_701_936_001,
        retryAfter: 1,
        'violated-policies': ['rl.read'],
        correlation_id: 'corr-1',
      },
    });
    for (const st of s) st.clock.advance(200); // one token at 300 per minute
    expect((await all(s, 'GET', '/api/items/7')).status).toBe(200);
  });

  it('never reaches the handler when limited; the 429 is the same for a foreign and a missing resource', async () => {
    const s = await stacks();
    for (let i = 0; i < 3; i++) await all(s, 'GET', '/api/items/1', { 'x-test-principal': 'mallory' });
    const before = counters(s);
    const h = { 'x-test-principal': 'mallory', 'x-request-id': 'same' };
    const foreign = await all(s, 'GET', '/api/items/1', h);
    const absent = await all(s, 'GET', '/api/items/999', h);
    expect(counters(s)).toEqual(before);
    expect(foreign.status).toBe(429);
    expect(absent.headers).toEqual(foreign.headers);
    expect({ ...(absent.problem as object), instance: '' }).toEqual({
      ...(foreign.problem as object),
      instance: '',
    });
  });

  it('exempts health without headers', async () => {
    const s = await stacks();
    for (let i = 0; i < 5; i++) expect(await all(s, 'GET', '/health')).toEqual({ status: 200, headers: {} });
  });

  it('keeps classes independent: draining writes leaves reads untouched', async () => {
    const s = await stacks();
    const p = { 'x-test-principal': 'alice' };
    expect((await all(s, 'POST', '/api/items', p)).status).toBe(201);
    expect((await all(s, 'POST', '/api/items', p)).status).toBe(201);
    expect((await all(s, 'POST', '/api/items', p)).status).toBe(429);
    expect((await all(s, 'GET', '/api/items/7', p)).headers.ratelimit).toBe('"rl.read";r=2;t=1');
    // Another principal has its own write bucket.
    expect((await all(s, 'POST', '/api/items', { 'x-test-principal': 'bob' })).status).toBe(201);
  });

  it('keys incoming webhooks by the route parameter', async () => {
    const s = await stacks();
    expect((await all(s, 'POST', '/hooks/abc')).status).toBe(200);
    expect((await all(s, 'POST', '/hooks/abc')).status).toBe(429);
    expect((await all(s, 'POST', '/hooks/def')).status).toBe(200);
  });

  it('counts a spoofed X-Forwarded-For from an untrusted peer against the peer (ID-T25)', async () => {
    const s = await stacks();
    for (let i = 0; i < 3; i++) {
      expect((await all(s, 'GET', '/api/items/7', { 'x-forwarded-for': `198.51.100.${i}` })).status).toBe(
        200,
      );
    }
    expect((await all(s, 'GET', '/api/items/7', { 'x-forwarded-for': '198.51.100.200' })).status).toBe(429);
    // Each adapter says once that the header was ignored.
    for (const x of s) expect(x.app.warnings, x.adapter).toEqual(['SLUICE_W_UNTRUSTED_FORWARDED']);
  });

  it('gives clients behind a trusted proxy separate buckets; IPv6 by /64, IPv4-mapped as IPv4', async () => {
    const s = await stacks({ trustedProxies: ['loopback'] });
    for (let i = 0; i < 5; i++) {
      expect((await all(s, 'GET', '/api/items/7', { 'x-forwarded-for': `198.51.100.${i}` })).status).toBe(
        200,
      );
    }
    const xff = (v: string) => ({ 'x-forwarded-for': v });
    for (let i = 0; i < 3; i++) await all(s, 'GET', '/api/items/7', xff(`2001:db8:1:2::${i + 1}`));
    expect((await all(s, 'GET', '/api/items/7', xff('2001:db8:1:2:ffff::9'))).status).toBe(429);
    expect((await all(s, 'GET', '/api/items/7', xff('2001:db8:1:3::1'))).status).toBe(200);
    for (let i = 0; i < 3; i++) await all(s, 'GET', '/api/items/7', xff('203.0.113.5'));
    expect((await all(s, 'GET', '/api/items/7', xff('::ffff:203.0.113.5'))).status).toBe(429);
    const fwd = await stacks({ trustedProxies: ['loopback'], proxyHeader: 'forwarded' });
    for (let i = 0; i < 3; i++)
      await all(fwd, 'GET', '/api/items/7', { forwarded: 'for="[2001:db8:9::1]:443"' });
    expect((await all(fwd, 'GET', '/api/items/7', { forwarded: 'for="[2001:db8:9::2]"' })).status).toBe(429);
    for (const x of [...s, ...fwd]) expect(x.app.warnings, x.adapter).toEqual([]);
  });

  it('counts failed credentials against public auth; then a valid token gets 429 unverified', async () => {
    const s = await stacks();
    const bearer = (t: string) => ({ authorization: `Bearer ${t}` });
    // Expired tokens do not count: only the route's own public-auth rule takes its token per request.
    expect((await all(s, 'GET', '/auth/me', bearer('expired'))).status).toBe(401);
    for (const st of s) st.clock.advance(6000); // one token back at 10 per minute: full again
    expect((await all(s, 'GET', '/auth/me', bearer('good'))).status).toBe(200);
    for (const st of s) st.clock.advance(6000);
    // Failed credentials: each takes one token by the rule and one by the failure (burst 3).
    expect((await all(s, 'GET', '/auth/me', bearer('bad'))).status).toBe(401);
    expect((await all(s, 'GET', '/auth/me', bearer('bad'))).status).toBe(401);
    const before = counters(s);
    const denied = await all(s, 'GET', '/auth/me', bearer('good'));
    expect(denied.status).toBe(429);
    expect((denied.problem as { 'violated-policies': string[] })['violated-policies']).toEqual([
      'rl.public_auth',
    ]);
    // Any route: a request that presents credentials from that IP is answered before its handler runs,
    // although its own bucket (rl.read) has tokens.
    const other = await all(s, 'GET', '/api/items/7', bearer('good'));
    expect(other.status).toBe(429);
    expect((other.problem as { 'violated-policies': string[] })['violated-policies']).toEqual([
      'rl.public_auth',
    ]);
    expect(counters(s)).toEqual(before); // neither the authenticator nor a handler was called
    expect((await all(s, 'GET', '/api/items/7')).status).toBe(200); // without credentials: not gated
  });

  it('sends legacy headers identically in both mode, with a white-label problem type', async () => {
    const s = await stacks({ headers: 'both', problemTypeBase: 'https://errors.example.com/problems/' });
    const ok = await all(s, 'POST', '/api/items');
    expect(ok.headers).toEqual({
      'ratelimit-policy': '"rl.write";q=120;w=60',
      ratelimit: '"rl.write";r=1;t=1',
      'x-ratelimit-limit': '120',
      'x-ratelimit-remaining': '1',
      'x-ratelimit-reset': '1701936001',
      'x-ratelimit-policy': 'rl.write',
    });
    await all(s, 'POST', '/api/items');
    const denied = await all(s, 'POST', '/api/items', { 'x-request-id': 'c' });
    expect(denied.headers['retry-after']).toBe('1');
    expect((denied.problem as { type: string }).type).toBe(
      'https://errors.example.com/problems/rate-limit-exceeded',
    );
  });

  it('generates a correlation id and echoes it in header and body', async () => {
    const s = await stacks({ headers: 'none' });
    for (let i = 0; i < 3; i++) await all(s, 'GET', '/api/items/7');
    for (const st of s) {
      const r = await send(st, 'GET', '/api/items/7');
      expect(r.status).toBe(429);
      expect(r.headers['x-request-id']).toBe((r.problem as { correlation_id: string }).correlation_id);
      expect(r.headers.ratelimit).toBeUndefined();
      expect(r.headers['retry-after']).toBe('1');
    }
  });

  it('refuses an absolute-form request target with the same 400 not_origin_form problem', async () => {
    const s = await stacks();
    const answers = await Promise.all(
      s.map((st) =>
        rawExchange(
          st.app.url,
          'GET http://example.test/api/items/7 HTTP/1.1\r\nHost: example.test\r\nConnection: close\r\n\r\n',
        ),
      ),
    );
    for (const [i, a] of answers.entries()) {
      expect({ adapter: s[i].adapter, status: a.split(' ')[1] }).toEqual({
        adapter: s[i].adapter,
        status: '400',
      });
      expect(a).toContain('"code":"bad_request_target"');
      expect(a).toContain('absolute and asterisk forms are not accepted');
    }
    expect(counters(s).map((c) => c.handler)).toEqual([0, 0, 0, 0]);
  });
});

/** Writes one request as given, byte for byte (fetch cannot send an absolute-form target), and reads the answer. */
function rawExchange(url: string, request: string): Promise<string> {
  const { port } = new URL(url);
  return new Promise((resolve, reject) => {
    const socket = connect(Number(port), '127.0.0.1', () => socket.end(request));
    let text = '';
    socket.setEncoding('utf8');
    socket.on('data', (c: string) => {
      text += c;
    });
    socket.on('end', () => resolve(text));
    socket.on('error', reject);
  });
}
