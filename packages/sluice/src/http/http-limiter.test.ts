import { describe, expect, it } from 'vitest';
import {
  type Check,
  type Decision,
  Limiter,
  ManualClock,
  type PolicyOptions,
  type RateLimitStore,
  SluiceError,
} from '../core/index.js';
import { MemoryStore } from '../memory/index.js';
import { createHttpLimiter } from './http-limiter.js';
import type { HttpLimiterOptions } from './http-limiter-options.js';
import { ipKey } from './keys.js';
import type { HttpRequestInfo, Verdict } from './types.js';

const POLICIES: PolicyOptions[] = [
  { name: 'rl.read', quota: 300, window: 60, burst: 3 },
  { name: 'rl.write', quota: 120, window: 60, burst: 30 },
  { name: 'rl.public_auth', quota: 10, window: 60, burst: 3 },
];

function setup(options: Partial<HttpLimiterOptions> = {}, policies = POLICIES) {
  const clock = new ManualClock(0);
  const limiter = new Limiter({ policies, store: new MemoryStore({ clock, sweepIntervalMs: 0 }) });
  const http = createHttpLimiter({
    limiter,
    rules: [
      { methods: 'GET', path: '/api/*', policies: ['rl.read'], key: 'principal' },
      { methods: ['POST', 'PUT', 'DELETE'], path: '/api/*', policies: ['rl.write'], key: 'principal' },
      { path: '/login', policies: ['rl.public_auth'], key: 'ip' },
    ],
    wallClock: () => 1_700_000_000_000 + clock.now(),
    publicAuth: { policy: 'rl.public_auth' },
    ...options,
  });
  const run = (req: Partial<HttpRequestInfo>): Verdict => {
    const v = http.evaluate({
      method: 'GET',
      path: '/api/items',
      headers: {},
      remoteAddress: '192.0.2.1',
      ...req,
    });
    if (v instanceof Promise) throw new Error('memory store answers synchronously');
    return v;
  };
  return { clock, limiter, http, run };
}

const header = (v: Verdict, name: string) =>
  v.headers.find(([n]) => n.toLowerCase() === name.toLowerCase())?.[1];

describe('429 problem', () => {
  it('answers the request after the burst with a problem, Retry-After and the security headers', () => {
    const { run } = setup();
    for (let i = 0; i < 3; i++) expect(run({}).action).toBe('allow');
    const v = run({ headers: { 'x-request-id': 'req-42' } });
    expect(v.action).toBe('deny');
    expect(v.status).toBe(429);
    expect(header(v, 'Retry-After')).toBe('1'); // ceil(60 / 300)
    expect(header(v, 'Content-Type')).toBe('application/problem+json');
    expect(header(v, 'Cache-Control')).toBe('no-store');
    expect(header(v, 'X-Content-Type-Options')).toBe('nosniff');
    expect(header(v, 'X-Request-Id')).toBe('req-42');
    expect(JSON.parse(v.body as string)).toEqual({
      type: 'about:blank',
      title: 'Too Many Requests',
      status: 429,
      detail:
        'Rate limit "rl.read" exceeded: bursts of up to 3 requests, refilled at 300 per minute; retry in 1 s.',
      instance: '/api/items',
      code: 'rate_limited',
      limit: 300,
      remaining: 0,
      reset: 1_700_000_001,
      retryAfter: 1,
      'violated-policies': ['rl.read'],
      correlation_id: 'req-42',
    });
  });

  it('leaves the body and its headers out with denialBodies: false, and decides the same', () => {
    const full = setup();
    const bare = setup({ denialBodies: false });
    for (let i = 0; i < 3; i++) expect(bare.run({}).action).toBe(full.run({}).action);
    const a = full.run({ headers: { 'x-request-id': 'req-42' } });
    const b = bare.run({ headers: { 'x-request-id': 'req-42' } });
    expect(b).toMatchObject({ action: 'deny', status: 429, outcome: a.outcome });
    expect(b.body).toBeUndefined();
    expect(b.decision).toEqual(a.decision);
    expect(header(b, 'Retry-After')).toBe('1');
    expect(header(b, 'Content-Type')).toBeUndefined();
    expect(b.headers).toEqual(a.headers.filter(([n]) => /^(ratelimit|x-ratelimit|retry-after)/i.test(n)));
    expect(() => setup({ denialBodies: 'no' as unknown as boolean })).toThrow(/denialBodies/);
  });

  it('writes the problem of the moment of the denial, however late and often it is read', () => {
    const { clock, http, run } = setup();
    for (let i = 0; i < 3; i++) run({});
    // A caller may reuse its request object (sluice replay does): the denial keeps the facts of its moment.
    const req = {
      method: 'GET',
      path: '/api/items',
      headers: { 'x-request-id': 'req-1' },
      remoteAddress: '192.0.2.1',
    };
    const v = http.evaluate(req) as Verdict;
    req.path = '/api/other';
    req.headers = { 'x-request-id': 'req-2' };
    clock.advance(30_000);
    for (let i = 0; i < 4; i++) run({ path: '/api/other', headers: { 'x-request-id': 'req-2' } });
    const body = JSON.parse(v.body as string);
    expect(body).toMatchObject({ instance: '/api/items', reset: 1_700_000_001, correlation_id: 'req-1' });
    expect(v.body).toBe(v.body);
    expect({ ...v }.body).toBe(v.body);
    expect(JSON.parse(JSON.stringify(v)).body).toBe(v.body);
  });

  it('uses the configured problem type base URI (white label) and strips the query from instance', () => {
    const { run } = setup({ problemTypeBase: 'https://errors.example.com/problems' });
    for (let i = 0; i < 3; i++) run({});
    const body = JSON.parse(run({ path: '/api/items?token=secret' }).body as string);
    expect(body.type).toBe('https://errors.example.com/problems/rate-limit-exceeded');
    expect(body.title).toBe('Rate Limit Exceeded');
    expect(body.instance).toBe('/api/items');
  });

  it('generates a correlation id when the request has none or an unsafe one', () => {
    const { run } = setup();
    for (let i = 0; i < 3; i++) run({});
    const a = run({ headers: { 'x-request-id': 'bad id\r\nx: y' } });
    expect(JSON.parse(a.body as string).correlation_id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-z]+$/);
    expect(JSON.parse(run({}).body as string).correlation_id).not.toBe(
      JSON.parse(a.body as string).correlation_id,
    );
    expect(header(a, 'X-Request-Id')).toBe(JSON.parse(a.body as string).correlation_id);
  });

  it('is identical for a foreign and a missing resource id apart from instance', () => {
    const { run } = setup();
    for (let i = 0; i < 3; i++) run({ path: '/api/items/1' });
    const foreign = run({ path: '/api/items/1', headers: { 'x-request-id': 'r' } });
    const missing = run({ path: '/api/items/999', headers: { 'x-request-id': 'r' } });
    expect(missing.status).toBe(foreign.status);
    expect(missing.headers).toEqual(foreign.headers);
    expect({ ...JSON.parse(missing.body as string), instance: 'x' }).toEqual({
      ...JSON.parse(foreign.body as string),
      instance: 'x',
    });
  });
});

describe('headers', () => {
  it('are exact on every limited response, both sets by default like the gateway', () => {
    const { run } = setup();
    const v = run({ method: 'POST', identity: { principal: 'alice' } });
    expect(v.headers).toEqual([
      ['RateLimit-Policy', '"rl.write";q=120;w=60'],
      ['RateLimit', '"rl.write";r=29;t=1'],
      ['X-RateLimit-Limit', '120'],
      ['X-RateLimit-Remaining', '29'],
      ['X-RateLimit-Reset', '1700000001'],
      ['X-RateLimit-Policy', 'rl.write'],
    ]);
  });

  it('follow the header mode', () => {
    expect(setup({ headers: 'none' }).run({}).headers).toEqual([]);
    expect(setup({ headers: 'legacy' }).run({}).headers).toEqual([
      ['X-RateLimit-Limit', '300'],
      ['X-RateLimit-Remaining', '2'],
      ['X-RateLimit-Reset', '1700000001'],
      ['X-RateLimit-Policy', 'rl.read'],
    ]);
    expect(
      setup({ headers: 'both' })
        .run({})
        .headers.map(([n]) => n),
    ).toEqual([
      'RateLimit-Policy',
      'RateLimit',
      'X-RateLimit-Limit',
      'X-RateLimit-Remaining',
      'X-RateLimit-Reset',
      'X-RateLimit-Policy',
    ]);
  });

  it('carry a partition key that is a hash, never the key', () => {
    const v = setup({ partitionKey: true }).run({ identity: { principal: 'alice' } });
    expect(header(v, 'RateLimit')).toMatch(/^"rl\.read";r=2;t=1;pk=:[A-Za-z0-9+/]{16}:$/);
    expect(v.headers.join()).not.toContain('alice');
  });
});

describe('keys and classes', () => {
  it('drains one class without touching another', () => {
    const { run } = setup();
    for (let i = 0; i < 30; i++) run({ method: 'POST', identity: { principal: 'a' } });
    expect(run({ method: 'POST', identity: { principal: 'a' } }).action).toBe('deny');
    expect(header(run({ method: 'GET', identity: { principal: 'a' } }), 'RateLimit')).toBe(
      '"rl.read";r=2;t=1',
    );
  });

  it('falls back to the client IP for anonymous callers and never borrows a principal bucket', () => {
    const { run, http } = setup();
    const anon = { remoteAddress: '198.51.100.7' };
    expect(http.keysOf({ method: 'GET', path: '/api/x', headers: {}, ...anon }).map((c) => c.key)).toEqual([
      'ip:198.51.100.7',
    ]);
    for (let i = 0; i < 3; i++) run(anon);
    expect(run(anon).action).toBe('deny');
    expect(run({ ...anon, identity: { principal: 'bob' } }).action).toBe('allow');
    expect(run({ remoteAddress: '198.51.100.8' }).action).toBe('allow');
  });

  it('keys IPv6 by /64 and IPv4-mapped addresses as IPv4', () => {
    const { run } = setup();
    for (let i = 0; i < 3; i++) run({ path: '/login', method: 'POST', remoteAddress: '2001:db8:1:2::a' });
    expect(run({ path: '/login', method: 'POST', remoteAddress: '2001:db8:1:2:ffff::b' }).action).toBe(
      'deny',
    );
    expect(run({ path: '/login', method: 'POST', remoteAddress: '2001:db8:1:3::a' }).action).toBe('allow');
    for (let i = 0; i < 3; i++) run({ path: '/login', method: 'POST', remoteAddress: '203.0.113.5' });
    expect(run({ path: '/login', method: 'POST', remoteAddress: '::ffff:203.0.113.5' }).action).toBe('deny');
  });

  it('takes the IP part of keys from clientIpKey when the caller gives it with clientIp', () => {
    const { http } = setup({ keyPrefix: 'acme:' });
    const keys = (extra: object) =>
      http
        .keysOf({ method: 'GET', path: '/api/x', headers: {}, remoteAddress: undefined, ...extra })
        .map((c) => c.key);
    // What a caller keeping one key per client passes: the same buckets as without it.
    expect(keys({ clientIp: '192.0.2.1', clientIpKey: ipKey('192.0.2.1') })).toEqual(
      keys({ clientIp: '192.0.2.1' }),
    );
    expect(keys({ clientIp: '192.0.2.1', clientIpKey: 'ip:192.0.2.0/24' })).toEqual(['acme:ip:192.0.2.0/24']);
    // Without clientIp the address is resolved from the connection, and a stray key is not used for it.
    expect(keys({ remoteAddress: '192.0.2.7', clientIpKey: 'ip:192.0.2.0/24' })).toEqual([
      'acme:ip:192.0.2.7',
    ]);
  });

  it('namespaces keys with the prefix and hashes over-long keys', () => {
    const { http } = setup({ keyPrefix: 'acme:', maxKeyLength: 40 });
    const keys = (principal: string) =>
      http.keysOf({
        method: 'GET',
        path: '/api/x',
        headers: {},
        remoteAddress: '192.0.2.1',
        identity: { principal },
      });
    expect(keys('alice')[0].key).toBe('acme:principal:alice');
    const long = keys('x'.repeat(500))[0].key;
    expect(long).toMatch(/^acme:#[A-Za-z0-9_-]{22}$/);
    expect(keys('y'.repeat(500))[0].key).not.toBe(long);
  });

  it('captures route parameters of path patterns for param and webhook keys', () => {
    const clock = new ManualClock(0);
    const limiter = new Limiter({
      policies: [{ name: 'rl.webhook_in', quota: 60, window: 60, burst: 1 }],
      store: new MemoryStore({ clock, sweepIntervalMs: 0 }),
    });
    const http = createHttpLimiter({
      limiter,
      rules: [{ path: '/hooks/:webhook_id', methods: 'POST', policies: ['rl.webhook_in'], key: 'webhook' }],
    });
    const req = (id: string): HttpRequestInfo => ({
      method: 'POST',
      path: `/hooks/${id}`,
      headers: {},
      remoteAddress: '192.0.2.1',
    });
    expect(http.keysOf(req('abc'))[0].key).toBe('webhook:abc');
    expect((http.evaluate(req('abc')) as Verdict).action).toBe('allow');
    expect((http.evaluate(req('abc')) as Verdict).action).toBe('deny');
    expect((http.evaluate(req('def')) as Verdict).action).toBe('allow');
  });
});

describe('rules', () => {
  it('apply every matching rule, all or nothing, and let the first matching rule key a policy', () => {
    const clock = new ManualClock(0);
    const limiter = new Limiter({
      policies: [
        { name: 'standard', quota: 300, window: 60, burst: 50 },
        { name: 'simulation', quota: 30, window: 60, burst: 2 },
        { name: 'studio', quota: 10, window: 60, burst: 1 },
      ],
      store: new MemoryStore({ clock, sweepIntervalMs: 0 }),
    });
    const http = createHttpLimiter({
      limiter,
      rules: [
        { path: '/api/risk/simulation/studio/*', policies: ['studio'], key: 'tenant-client' },
        { path: '/api/risk/simulation/*', policies: ['simulation', 'studio'], key: 'tenant-client' },
        { policies: ['standard'], key: 'tenant-client' },
      ],
    });
    const identity = { tenant: 't1', client: 'c1' };
    const at = (path: string) =>
      http.evaluate({ method: 'POST', path, headers: {}, remoteAddress: '192.0.2.1', identity }) as Verdict;
    const v = at('/api/risk/simulation/studio/run');
    expect(header(v, 'RateLimit-Policy')).toBe(
      '"studio";q=10;w=60, "simulation";q=30;w=60, "standard";q=300;w=60',
    );
    // studio is empty now: the next studio call is denied and takes nothing from the other buckets.
    const denied = at('/api/risk/simulation/studio/run');
    expect(denied.action).toBe('deny');
    expect(JSON.parse(denied.body as string)['violated-policies']).toEqual(['studio']);
    // The simulation rule also names studio, so it is denied too: nothing was taken anywhere.
    const sim = at('/api/risk/simulation/x');
    expect(sim.action).toBe('deny');
    expect(header(sim, 'RateLimit')).toBe('"simulation";r=1;t=2, "studio";r=0;t=6, "standard";r=49;t=1');
  });

  it('match operation classes given by the caller', () => {
    const { limiter } = setup();
    const http = createHttpLimiter({ limiter, rules: [{ operation: 'rl.write', policies: ['rl.write'] }] });
    const base = { method: 'POST', path: '/anything', headers: {}, remoteAddress: '192.0.2.1' };
    expect((http.evaluate(base) as Verdict).action).toBe('exempt');
    expect((http.evaluate({ ...base, operation: 'rl.write' }) as Verdict).action).toBe('allow');
  });

  it('match methods without a path, and charge the largest cost of the matching rules', () => {
    const { limiter } = setup();
    const http = createHttpLimiter({
      limiter,
      rules: [
        { methods: 'POST', policies: ['rl.write'], cost: (req) => (req.path === '/bulk' ? 3 : 1) },
        { path: '/bulk', policies: ['rl.read'], cost: 2 },
      ],
    });
    const at = (method: string, path: string) =>
      http.evaluate({ method, path, headers: {}, remoteAddress: '192.0.2.1' }) as Verdict;
    expect(at('GET', '/x').action).toBe('exempt');
    expect(header(at('POST', '/x'), 'RateLimit')).toBe('"rl.write";r=29;t=1');
    expect(header(at('POST', '/bulk'), 'RateLimit')).toBe('"rl.write";r=26;t=2, "rl.read";r=0;t=1');
    expect(at('GET', '/bulk').action).toBe('deny');
  });

  it('charge the request cost', () => {
    const { run } = setup();
    expect(header(run({ method: 'POST', cost: 10 }), 'RateLimit')).toBe('"rl.write";r=20;t=5');
  });
});

describe('exemptions', () => {
  it('exempt health, readiness, metrics and .well-known by default, without headers', () => {
    const { limiter } = setup();
    const http = createHttpLimiter({ limiter, rules: [{ policies: ['rl.read'] }] });
    for (const path of [
      '/health',
      '/ready',
      '/metrics',
      '/.well-known/openid-configuration',
      '/health?x=1',
    ]) {
      expect(http.evaluate({ method: 'GET', path, headers: {}, remoteAddress: '192.0.2.1' })).toEqual({
        action: 'exempt',
        status: 200,
        outcome: 'exempt_endpoint',
        exemptReason: 'endpoint',
        headers: [],
      });
    }
    expect(
      (http.evaluate({ method: 'POST', path: '/health', headers: {}, remoteAddress: '1.2.3.4' }) as Verdict)
        .action,
    ).toBe('allow');
  });

  it('exempt clients by predicate and loopback when asked', () => {
    const { run } = setup({ exempt: { when: (req) => req.identity?.tier === 'unlimited', loopback: true } });
    expect(run({ identity: { tier: 'unlimited' } }).action).toBe('exempt');
    expect(run({ remoteAddress: '::1' }).action).toBe('exempt');
    expect(run({ remoteAddress: '::ffff:127.0.0.1' }).action).toBe('exempt');
    expect(run({}).action).toBe('allow');
  });
});

describe('client IP (ID-T25)', () => {
  it('counts a spoofed X-Forwarded-For from an untrusted peer against the peer', () => {
    const { run } = setup();
    for (let i = 0; i < 3; i++) {
      expect(run({ path: '/login', headers: { 'x-forwarded-for': `198.51.100.${i}` } }).action).toBe('allow');
    }
    expect(run({ path: '/login', headers: { 'x-forwarded-for': '198.51.100.99' } }).action).toBe('deny');
  });

  it('gives clients behind a trusted proxy their own buckets', () => {
    const { run } = setup({ trustedProxies: ['192.0.2.0/24'] });
    for (let i = 0; i < 5; i++) {
      expect(run({ path: '/login', headers: { 'x-forwarded-for': `198.51.100.${i}` } }).action).toBe('allow');
    }
  });
});

describe('failed credentials (public auth)', () => {
  it('count against the client IP; then even valid credentials get 429 unverified; expired tokens do not count', () => {
    const { run, http } = setup();
    const req = (token: string): HttpRequestInfo => ({
      method: 'GET',
      path: '/api/me',
      headers: { authorization: `Bearer ${token}` },
      remoteAddress: '203.0.113.9',
    });
    for (let i = 0; i < 5; i++)
      expect(http.recordFailedCredentials(req('old'), 'token_expired')).toBeUndefined();
    expect((http.checkCredentials(req('good')) as Verdict).action).toBe('allow');
    for (let i = 0; i < 3; i++) {
      expect((http.recordFailedCredentials(req('bad'), 'invalid_token') as Decision).allowed).toBe(true);
    }
    const v = run(req('good'));
    expect(v.action).toBe('deny');
    expect(JSON.parse(v.body as string)['violated-policies']).toEqual(['rl.public_auth']);
    expect(header(v, 'RateLimit-Policy')).toBe('"rl.public_auth";q=10;w=60');
    // Requests without credentials from that IP are not affected by the gate.
    expect(run({ remoteAddress: '203.0.113.9', path: '/api/other' }).action).toBe('allow');
    // Another IP is not affected at all.
    expect(run({ ...req('good'), remoteAddress: '203.0.113.10' }).action).toBe('allow');
  });

  it('requires the publicAuth option to record failures', () => {
    const { limiter } = setup();
    const http = createHttpLimiter({ limiter, rules: [] });
    expect(() =>
      http.recordFailedCredentials({ method: 'GET', path: '/', headers: {}, remoteAddress: '192.0.2.1' }),
    ).toThrow(/publicAuth/);
  });
});

describe('stores', () => {
  class AsyncStore implements RateLimitStore {
    readonly kind = 'async-memory';
    constructor(readonly inner: MemoryStore) {}
    decide = async (c: readonly Check[], n: number) => this.inner.decide(c, n);
    reserve = async (c: readonly Check[], n: number) => this.inner.reserve(c, n);
    peek = async (c: readonly Check[], n: number) => this.inner.peek(c, n);
    refund = async (c: readonly Check[], n: number) => this.inner.refund(c, n);
    reset = async (c: readonly Check[]) => this.inner.reset(c);
    close = async () => this.inner.close();
  }

  it('resolve verdicts asynchronously with a remote-style store', async () => {
    const clock = new ManualClock(0);
    const limiter = new Limiter({
      policies: POLICIES,
      store: new AsyncStore(new MemoryStore({ clock, sweepIntervalMs: 0 })),
    });
    const http = createHttpLimiter({
      limiter,
      rules: [{ policies: ['rl.read'] }],
      publicAuth: { policy: 'rl.public_auth' },
    });
    const req = { method: 'GET', path: '/x', headers: { authorization: 'x' }, remoteAddress: '192.0.2.1' };
    const v = http.evaluate(req);
    expect(v).toBeInstanceOf(Promise);
    expect((await v).headers[1]).toEqual(['RateLimit', '"rl.read";r=2;t=1']);
  });

  it('answer 503 when the store cannot decide and its failure mode is closed', () => {
    const down: RateLimitStore = {
      kind: 'down',
      decide: (_checks, cost) => ({
        allowed: false,
        reason: 'store_unavailable',
        cost,
        retryAfterSeconds: 1,
        delayMs: 0,
        outcomes: [],
        violated: [],
      }),
      reserve: () => {
        throw new Error('unused');
      },
      peek: () => {
        throw new Error('unused');
      },
      refund: () => undefined,
      reset: () => undefined,
      close: () => undefined,
    };
    const limiter = new Limiter({ policies: POLICIES, store: down });
    const http = createHttpLimiter({ limiter, rules: [{ policies: ['rl.read'] }] });
    const v = http.evaluate({
      method: 'GET',
      path: '/x',
      headers: {},
      remoteAddress: '192.0.2.1',
    }) as Verdict;
    expect(v.status).toBe(503);
    expect(header(v, 'RateLimit')).toBeUndefined();
    expect(JSON.parse(v.body as string).code).toBe('rate_limiter_unavailable');
  });
});

describe('options', () => {
  const { limiter } = setup();
  const bad: [string, Partial<HttpLimiterOptions>, RegExp][] = [
    ['unknown option', { nope: 1 } as never, /HttpLimiter options\.nope/],
    ['unknown policy', { rules: [{ policies: ['rl.nope'] }] }, /unknown policy "rl.nope"/],
    [
      'bad pattern',
      { rules: [{ path: 'api', policies: ['rl.read'] }] },
      /rules\[0\]\.path must be a path pattern/,
    ],
    ['wildcard inside', { rules: [{ path: '/a*', policies: ['rl.read'] }] }, /only as whole segments/],
    ['bad method', { rules: [{ methods: 'G T', policies: ['rl.read'] }] }, /rules\[0\]\.methods/],
    [
      'bad key',
      { rules: [{ policies: ['rl.read'], key: 'nope' as never }] },
      /rules\[0\]\.key must be one of ip/,
    ],
    ['bad proxy', { trustedProxies: ['10.0.0.0/99'] }, /trustedProxies\[0\]/],
    ['bad mode', { headers: 'draft-7' as never }, /headers must be one of/],
    ['bad type base', { problemTypeBase: 'not a uri' }, /problemTypeBase must be an absolute URI/],
    ['bad exempt', { exempt: { endpoints: ['GET health'] } }, /exempt\.endpoints\[0\]/],
    ['bad cost', { rules: [{ policies: ['rl.read'], cost: 0 }] }, /rules\[0\]\.cost must be an integer >= 1/],
    ['bad max key length', { maxKeyLength: 10 }, /maxKeyLength must be an integer from 32 to 4096/],
    ['bad exempt predicate', { exempt: { when: 1 as never } }, /exempt\.when must be a function/],
    ['bad wall clock', { wallClock: 'now' as never }, /wallClock must be a function/],
    ['bad request id header', { requestIdHeader: 'x id' }, /requestIdHeader must be a header name/],
    [
      'bad count failure',
      { publicAuth: { policy: 'rl.public_auth', countFailure: 1 as never } },
      /publicAuth\.countFailure/,
    ],
    [
      'bad has credentials',
      { publicAuth: { policy: 'rl.public_auth', hasCredentials: 1 as never } },
      /publicAuth\.hasCredentials/,
    ],
    ['bad operation', { rules: [{ operation: [], policies: ['rl.read'] }] }, /rules\[0\]\.operation/],
    ['empty policies', { rules: [{ policies: [] }] }, /rules\[0\]\.policies must be a non-empty array/],
    ['rules not an array', { rules: {} as never }, /rules must be an array/],
  ];
  it.each(bad)('reject %s, naming the option', (_label, options, message) => {
    expect(() => createHttpLimiter({ limiter, rules: [], ...options })).toThrow(message);
    try {
      createHttpLimiter({ limiter, rules: [], ...options });
    } catch (e) {
      expect(e).toBeInstanceOf(SluiceError);
    }
  });

  it('rejects policy names that headers cannot carry', () => {
    const l = new Limiter({
      policies: [{ name: 'über', quota: 1, window: 1 }],
      store: new MemoryStore({ sweepIntervalMs: 0 }),
    });
    expect(() => createHttpLimiter({ limiter: l, rules: [{ policies: ['über'] }] })).toThrow(
      /printable ASCII/,
    );
  });

  it('gives a frozen limiter', () => {
    expect(Object.isFrozen(setup().http)).toBe(true);
  });
});
