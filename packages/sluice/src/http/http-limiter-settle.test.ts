import { describe, expect, it } from 'vitest';
import { Limiter, ManualClock, type PolicyOptions } from '../core/index.js';
import { MemoryStore } from '../memory/index.js';
import { createHttpLimiter } from './http-limiter.js';
import type { RuleOptions } from './rules.js';
import type { SettleEvents } from './settle-observer.js';
import type { HttpRequestInfo, Verdict } from './types.js';

const POLICIES: PolicyOptions[] = [
  { name: 'requests', quota: 60, window: 60, burst: 10 },
  // 100 tokens a minute, so a token comes back every 0.6 seconds.
  { name: 'tokens', quota: 100, window: 60, burst: 100 },
  { name: 'bytes', quota: 10_000, window: 60, burst: 10_000 },
  { name: 'units', quota: 50, window: 60, burst: 50 },
  { name: 'login', quota: 5, window: 60, burst: 5 },
];

function setup(rules: RuleOptions[]) {
  const clock = new ManualClock(0);
  const limiter = new Limiter({ policies: POLICIES, store: new MemoryStore({ clock, sweepIntervalMs: 0 }) });
  const units: [string, string, number][] = [];
  const fallbacks: [string, string][] = [];
  const events: SettleEvents = {
    recordUnits: (p, u, n) => units.push([p, u, n]),
    recordSettleFallback: (r, why) => fallbacks.push([r, why]),
  };
  const http = createHttpLimiter({ limiter, rules, settleMetrics: events, wallClock: () => clock.now() });
  const request = (path = '/v1/chat', body?: unknown): HttpRequestInfo & { body?: unknown } => ({
    method: 'POST',
    path,
    headers: {},
    remoteAddress: '192.0.2.1',
    body,
  });
  const evaluate = (path?: string, body?: unknown) => http.evaluate(request(path, body)) as Verdict;
  return { clock, http, evaluate, units, fallbacks };
}

/** Plays a response to the verdict's observer as a feeder would. */
function respond(
  v: Verdict,
  r: {
    status?: number;
    headers?: Record<string, string>;
    body?: string[];
    completed?: boolean;
    received?: number;
  },
) {
  const o = v.observer;
  if (o === undefined) throw new Error('no observer');
  const headers = new Map(Object.entries(r.headers ?? {}));
  let sent = 0;
  if (r.status !== undefined) {
    o.head?.({ status: r.status, get: (n) => headers.get(n), remove: (n) => void headers.delete(n) });
  }
  for (const chunk of r.body ?? []) {
    const bytes = new TextEncoder().encode(chunk);
    sent += bytes.length;
    if (o.wantsBody === true) o.body?.(bytes);
  }
  o.end({
    completed: r.completed ?? true,
    status: r.status ?? 0,
    bytesSent: sent,
    bytesReceived: r.received ?? 0,
  });
  return headers;
}

const remaining = (v: Verdict) =>
  Number(/r=(\d+)/.exec(v.headers.find(([n]) => n === 'RateLimit')?.[1] ?? '')?.[1]);

describe('a cost settled from the response', () => {
  it('charges the units of an upstream header and removes it from the answer', () => {
    const t = setup([{ path: '/v1/*', policies: ['units'], settle: { header: 'X-Cost' } }]);
    const v = t.evaluate();
    expect(remaining(v)).toBe(49);
    const left = respond(v, { status: 200, headers: { 'x-cost': '20', 'content-type': 'text/plain' } });
    expect(left.has('x-cost')).toBe(false);
    // 50 - 20, then this request's own token.
    expect(remaining(t.evaluate())).toBe(29);
    expect(t.units).toEqual([['units', 'units', 20]]);
  });

  it('keeps the header when told to, and falls back (counted) on a header that is missing or not a count', () => {
    const t = setup([
      { path: '/v1/*', policies: ['units'], settle: { header: 'x-cost', keepHeader: true, fallback: 5 } },
    ]);
    expect(respond(t.evaluate(), { status: 200, headers: { 'x-cost': '3' } }).get('x-cost')).toBe('3');
    respond(t.evaluate(), { status: 200, headers: { 'x-cost': '-4' } });
    respond(t.evaluate(), { status: 200, headers: { 'x-cost': '1.5' } });
    respond(t.evaluate(), { status: 200 });
    expect(t.fallbacks).toEqual([
      ['rules[0]', 'header_invalid'],
      ['rules[0]', 'header_invalid'],
      ['rules[0]', 'header_missing'],
    ]);
    expect(remaining(t.evaluate())).toBe(50 - 3 - 5 * 3 - 1);
  });

  it('charges a header of 16 digits and more in full, clamped as a JSON usage is, never the fallback', () => {
    for (const [raw, units] of [
      ['1000000000000000', 1e15],
      ['99999999999999999999', Number.MAX_SAFE_INTEGER],
    ] as const) {
      const t = setup([{ path: '/v1/*', policies: ['units'], settle: { header: 'X-Cost', fallback: 1 } }]);
      respond(t.evaluate(), { status: 200, headers: { 'x-cost': raw } });
      expect(t.fallbacks).toEqual([]);
      expect(t.units).toEqual([['units', 'units', units]]);
      // The bucket is in debt (one burst at most), not one token short of full.
      const v = t.evaluate();
      expect(v.action).toBe('deny');
      expect(remaining(v)).toBe(0);
    }
  });

  it('charges body bytes sent, also when the client went away mid-response', () => {
    const t = setup([{ path: '/files/*', policies: ['bytes'], settle: { bytes: 'response' } }]);
    respond(t.evaluate('/files/a'), { status: 200, body: ['x'.repeat(3000)] });
    respond(t.evaluate('/files/b'), { status: 200, body: ['x'.repeat(1500)], completed: false });
    expect(remaining(t.evaluate('/files/c'))).toBe(10_000 - 4500 - 1);
    expect(t.evaluate('/files/d').headers.find(([n]) => n === 'RateLimit-Policy')?.[1]).toBe(
      '"bytes";q=10000;qu="content-bytes";w=60',
    );
    // An end with nothing known (a decision API never sees the response): the reservation of 1 stands.
    respond(t.evaluate('/files/e'), { completed: false });
    expect(t.units.at(-1)).toEqual(['bytes', 'bytes', 1]);
    const both = setup([{ path: '/files/*', policies: ['bytes'], settle: { bytes: 'both' } }]);
    respond(both.evaluate('/files/a'), { status: 200, body: ['x'.repeat(100)], received: 400 });
    expect(remaining(both.evaluate('/files/c'))).toBe(10_000 - 500 - 1);
  });

  it('reserves at admission, refuses what the bucket cannot cover, and settles JSON usage: a refund or a debt', () => {
    const t = setup([
      { path: '/v1/*', policies: ['tokens'], settle: { json: 'usage.total_tokens', reserve: 60 } },
    ]);
    const first = t.evaluate();
    expect(first.action).toBe('allow');
    expect(remaining(first)).toBe(40);
    // The bucket holds 40 of the 60 a second request reserves: refused up front, and nothing is kept of it.
    const refused = t.evaluate();
    expect(refused.status).toBe(429);
    expect(refused.observer).toBeUndefined();
    respond(first, {
      status: 200,
      headers: { 'content-type': 'application/json' },
      body: ['{"usage":{"total_', 'tokens":25}}'],
    });
    const second = t.evaluate();
    expect(remaining(second)).toBe(100 - 25 - 60);
    // This one spent 140: 80 more than reserved, into a debt shown honestly.
    respond(second, {
      status: 200,
      headers: { 'content-type': 'application/json' },
      body: ['{"usage":{"total_tokens":140}}'],
    });
    const denied = t.evaluate();
    expect(denied.status).toBe(429);
    expect(remaining(denied)).toBe(0);
    // 65 tokens owed below the 60 needed: 125 tokens at 100 a minute.
    expect(denied.headers.find(([n]) => n === 'Retry-After')?.[1]).toBe('75');
  });

  it('refuses a reservation above the burst as one no wait can meet, naming the reservation, not the plan cost', () => {
    const t = setup([
      { path: '/v1/*', policies: ['tokens'], settle: { json: 'usage.total_tokens', reserve: 101 } },
    ]);
    const refused = t.evaluate();
    expect(refused.status).toBe(429);
    expect(refused.decision?.reason).toBe('cost_exceeds_burst');
    expect(refused.decision?.cost).toBe(101);
    expect(JSON.parse(refused.body ?? '{}').detail).toBe(
      'This request costs 101 tokens, more than the burst of 100 that policy "tokens" allows.',
    );
    // No wait can meet it: no Retry-After for a client to wait out and try again for ever, and a code of its own.
    expect(refused.headers.find(([n]) => n.toLowerCase() === 'retry-after')).toBeUndefined();
    expect(JSON.parse(refused.body ?? '{}').code).toBe('cost_exceeds_burst');
    // Nothing was kept of it: a request of a rule reserving nothing more finds the bucket full.
    const t2 = setup([
      { path: '/v1/*', policies: ['tokens'], settle: { json: 'usage.total_tokens', reserve: 5000 } },
    ]);
    expect(t2.evaluate().decision?.reason).toBe('cost_exceeds_burst');
  });

  it('describes the buckets of a reservation above the burst as they are: nothing charged, no wait to advise', () => {
    const t = setup([
      { path: '/v1/*', policies: ['requests'] },
      {
        path: '/v1/*',
        policies: ['tokens'],
        settle: {
          json: 'usage.total_tokens',
          reserve: (req) => (req as { body?: { n: number } }).body?.n ?? 1,
        },
      },
    ]);
    const refused = t.evaluate('/v1/chat', { n: 101 });
    expect(refused.decision?.reason).toBe('cost_exceeds_burst');
    const rl = refused.headers.find(([n]) => n === 'RateLimit')?.[1] ?? '';
    // Both buckets full: the plan's token of "requests" went back, and "tokens" was never charged.
    expect(rl).toMatch(/"requests";r=10(;t=0)?(,|$)/);
    expect(rl).toMatch(/"tokens";r=100(;t=0)?(,|$)/);
    const body = JSON.parse(refused.body ?? '{}');
    expect(body.remaining).toBe(100);
    expect(body.retryAfter).toBeUndefined();
    expect(body['violated-policies']).toEqual(['tokens']);
    expect(refused.decision?.retryAfterSeconds).toBe(0);
    // And the buckets are so: the next request, reserving 5, finds them full.
    const next = t.evaluate('/v1/chat', { n: 5 }).headers.find(([n]) => n === 'RateLimit')?.[1] ?? '';
    expect(next).toMatch(/"requests";r=9;/);
    expect(next).toMatch(/"tokens";r=95;/);
  });

  it('takes weighted sums of streamed usage, and keeps the reservation of a stream cut before its usage', () => {
    const t = setup([
      {
        path: '/v1/*',
        policies: ['tokens'],
        settle: { json: { 'usage.prompt_tokens': 1, 'usage.completion_tokens': 2 }, reserve: 30 },
      },
    ]);
    const sse = { 'content-type': 'text/event-stream; charset=utf-8' };
    respond(t.evaluate(), {
      status: 200,
      headers: sse,
      body: [
        'data: {"choices":[{"delta":{"content":"hi"}}],"usage":null}\n\n',
        'data: {"usage":{"prompt_tokens":4,"completion_tokens":3}}\n\ndata: [DONE]\n\n',
      ],
    });
    expect(remaining(t.evaluate())).toBe(100 - 10 - 30);
    // That one is cut short before its usage: the 30 reserved stand.
    const cut = t.evaluate();
    respond(cut, { status: 200, headers: sse, body: ['data: {"choices":[]}\n\n'], completed: false });
    expect(t.units.at(-1)).toEqual(['tokens', 'tokens', 30]);
    // A complete answer without usage falls back, counted.
    const plain = t.evaluate();
    respond(plain, { status: 200, headers: { 'content-type': 'application/json' }, body: ['{"id":1}'] });
    expect(t.fallbacks).toEqual([['rules[0]', 'json_missing']]);
  });

  it('charges the fallback for a usage below zero, as for an invalid header value', () => {
    const t = setup([
      {
        path: '/v1/*',
        policies: ['tokens'],
        settle: { json: 'usage.total_tokens', reserve: 10, fallback: 40 },
      },
    ]);
    const json = { 'content-type': 'application/json' };
    respond(t.evaluate(), { status: 200, headers: json, body: ['{"usage":{"total_tokens":-1000}}'] });
    expect(t.units.at(-1)).toEqual(['tokens', 'tokens', 40]);
    expect(t.fallbacks).toEqual([['rules[0]', 'json_invalid']]);
    // Weighted paths: one below zero makes the usage invalid as a whole, not a smaller sum.
    const w = setup([
      {
        path: '/v1/*',
        policies: ['tokens'],
        settle: { json: { 'usage.prompt_tokens': 1, 'usage.completion_tokens': 2 }, reserve: 10 },
      },
    ]);
    respond(w.evaluate(), {
      status: 200,
      headers: json,
      body: ['{"usage":{"prompt_tokens":30,"completion_tokens":-20}}'],
    });
    // No fallback configured: the reservation stands.
    expect(w.units.at(-1)).toEqual(['tokens', 'tokens', 10]);
    expect(w.fallbacks).toEqual([['rules[0]', 'json_invalid']]);
  });

  it('charges the tier its request and the endpoint rule its tokens, each settled apart', () => {
    const t = setup([
      { name: 'tier', policies: ['requests'] },
      {
        name: 'chat',
        path: '/v1/*',
        policies: ['tokens'],
        settle: { json: 'usage.total_tokens', reserve: 50 },
      },
    ]);
    const v = t.evaluate();
    const r = v.headers.find(([n]) => n === 'RateLimit')?.[1] ?? '';
    expect(r).toContain('"tokens";r=50');
    respond(v, {
      status: 200,
      headers: { 'content-type': 'application/json' },
      body: ['{"usage":{"total_tokens":7}}'],
    });
    const next = t.evaluate().headers.find(([n]) => n === 'RateLimit')?.[1] ?? '';
    expect(next).toMatch(/"tokens";r=43|"requests";r=8/);
    expect(t.units).toEqual([['tokens', 'tokens', 7]]);
  });
});

describe('a queueing policy with a settled cost', () => {
  it('settles the cost of a request that waited for its tokens', async () => {
    const clock = new ManualClock(0);
    const limiter = new Limiter({
      policies: [{ name: 'q', quota: 60, window: 60, burst: 1, queue: { limit: 5, maxWaitMs: 10_000 } }],
      store: new MemoryStore({ clock, sweepIntervalMs: 0 }),
      clock,
    });
    const http = createHttpLimiter({ limiter, rules: [{ path: '/q', policies: ['q'], count: 'failed' }] });
    const req = { method: 'GET', path: '/q', headers: {}, remoteAddress: '192.0.2.1' };
    const first = http.evaluate(req) as Verdict;
    expect(first.observer).toBeDefined();
    const waiting = http.evaluate(req) as Promise<Verdict>;
    await new Promise<void>((resolve) => setImmediate(resolve));
    clock.advance(1_000);
    const second = await waiting;
    expect(second.action).toBe('allow');
    expect(second.observer).toBeDefined();
  });
});

describe('count: only some responses', () => {
  it('count failed on a login route: 5 failures a minute, then 429, while successes are never limited', () => {
    const t = setup([{ path: '/login', policies: ['login'], count: 'failed' }]);
    for (let i = 0; i < 20; i++) {
      const ok = t.evaluate('/login');
      expect(ok.action).toBe('allow');
      respond(ok, { status: 200 });
    }
    for (let i = 0; i < 5; i++) respond(t.evaluate('/login'), { status: 401 });
    const limited = t.evaluate('/login');
    expect(limited.status).toBe(429);
    // Five failures in flight at once take their tokens at admission: a sixth is refused before any answer.
    t.clock.advance(60_000);
    const inFlight = Array.from({ length: 5 }, () => t.evaluate('/login'));
    expect(t.evaluate('/login').status).toBe(429);
    for (const v of inFlight) respond(v, { status: 200 });
    expect(t.evaluate('/login').action).toBe('allow');
  });

  it('takes statuses and ranges, and refuses an empty list or a bad range naming the option', () => {
    const t = setup([{ path: '/x', policies: ['login'], count: [429, '500-599'] }]);
    respond(t.evaluate('/x'), { status: 404 });
    respond(t.evaluate('/x'), { status: 503 });
    expect(remaining(t.evaluate('/x'))).toBe(3);
    expect(() => setup([{ path: '/x', policies: ['login'], count: [] }])).toThrow(
      /rules\[0\]\.count must be 'failed', 'successful' or a non-empty list/,
    );
    expect(() => setup([{ path: '/x', policies: ['login'], count: ['600-700'] }])).toThrow(
      /rules\[0\]\.count\[0\]/,
    );
  });
});

describe('settle options', () => {
  it('are refused with the option, the expectation and the value', () => {
    const bad = (settle: unknown) => () =>
      setup([{ path: '/x', policies: ['units'], settle: settle as never }]);
    expect(bad({})).toThrow(/rules\[0\]\.settle must be exactly one of header, bytes and json/);
    expect(bad({ header: 'x', bytes: 'response' })).toThrow(/exactly one of/);
    expect(bad({ bytes: 'all' })).toThrow(
      /rules\[0\]\.settle\.bytes must be 'response', 'request' or 'both', got "all"/,
    );
    expect(bad({ json: 'usage..x' })).toThrow(/dotted paths/);
    expect(bad({ json: 'a', reserve: -1 })).toThrow(/rules\[0\]\.settle\.reserve must be an integer/);
    expect(bad({ json: { a: -2 } })).toThrow(/weight of 0 or more/);
    expect(bad({ header: 'x', unit: 'y' })).toThrow(/unit/);
  });

  it('leave a request of a rule without them with no observer', () => {
    const t = setup([{ path: '/v1/*', policies: ['units'] }]);
    expect(t.evaluate().observer).toBeUndefined();
  });
});
