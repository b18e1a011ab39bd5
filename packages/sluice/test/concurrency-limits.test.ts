import { createServer, get as httpGet, type IncomingMessage, type ServerResponse } from 'node:http';
import { describe, expect, it } from 'vitest';
import { Limiter, ManualClock } from '../src/core/index.js';
import {
  createHttpLimiter,
  type HttpRequestInfo,
  inFlightRequests,
  type Verdict,
} from '../src/http/index.js';
import { MemoryStore } from '../src/memory/index.js';
import { withRateLimit } from '../src/node/node-adapter.js';
import { listen } from './support/adapter-fixtures.js';

function limiterWith(slots: number) {
  const clock = new ManualClock(0);
  const store = new MemoryStore({ clock, sweepIntervalMs: 0 });
  const limiter = new Limiter({
    policies: [
      { name: 'reports', concurrent: slots },
      { name: 'rl', quota: 600, window: 60, burst: 100 },
    ],
    store,
  });
  const http = createHttpLimiter({
    limiter,
    rules: [
      { path: '/api/*', policies: ['rl'] },
      { path: '/api/reports/*', policies: ['reports'] },
    ],
    headers: 'draft-11',
  });
  return { clock, store, http };
}

const request = (path: string, ip = '192.0.2.1'): HttpRequestInfo => ({
  method: 'GET',
  path,
  headers: {},
  remoteAddress: ip,
});

/** A GET on a connection of its own (no pool between the clients and the server); resolves with the status. */
function get(url: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const r = httpGet(url, { agent: false }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode ?? 0));
    });
    r.on('error', reject);
  });
}

/** Lets the promise chains started so far run up to their next wait (a sleep on the manual clock). */
async function turns(): Promise<void> {
  for (let i = 0; i < 5; i++) await new Promise((r) => setImmediate(r));
}

const END = { completed: true, status: 200, bytesSent: 0, bytesReceived: 0 };

describe('concurrency policies over HTTP', () => {
  it('holds a slot per admitted request until its response ends, and refuses beyond N with a 429', () => {
    const { http } = limiterWith(2);
    const a = http.evaluate(request('/api/reports/1')) as Verdict;
    const b = http.evaluate(request('/api/reports/2')) as Verdict;
    expect([a.action, b.action]).toEqual(['allow', 'allow']);
    expect(a.headers).toContainEqual([
      'RateLimit-Policy',
      '"rl";q=600;w=60, "reports";q=2;qu="concurrent-requests"',
    ]);
    expect(a.headers).toContainEqual(['RateLimit', '"rl";r=99;t=1, "reports";r=1']);
    const c = http.evaluate(request('/api/reports/3')) as Verdict;
    expect(c.action).toBe('deny');
    expect(c.status).toBe(429);
    expect(c.observer).toBeUndefined();
    expect(c.headers).toContainEqual(['Retry-After', '1']);
    expect(JSON.parse(c.body as string)['violated-policies']).toEqual(['reports']);
    // All or nothing: the refused request took no token of its rate policy either.
    expect(c.headers).toContainEqual(['RateLimit', '"rl";r=98;t=1, "reports";r=0']);
    // Another client has slots of its own.
    expect((http.evaluate(request('/api/reports/4', '192.0.2.2')) as Verdict).action).toBe('allow');
    // The process-wide gauge counts every key's requests in flight.
    const reports = http.limiter.policy('reports');
    expect(inFlightRequests(reports)).toBe(3);
    // An end gives the slot back, once: a second end changes nothing.
    a.observer?.end(END);
    a.observer?.end(END);
    expect(inFlightRequests(reports)).toBe(2);
    const d = http.evaluate(request('/api/reports/5')) as Verdict;
    expect(d.action).toBe('allow');
    expect((http.evaluate(request('/api/reports/6')) as Verdict).action).toBe('deny');
    // A path without a concurrency rule carries no observer.
    expect((http.evaluate(request('/api/other')) as Verdict).observer).toBeUndefined();
  });

  it('a request waiting in a queue holds no slot: it takes one after its wait, or is refused then', async () => {
    const clock = new ManualClock(0);
    const store = new MemoryStore({ clock, sweepIntervalMs: 0 });
    const limiter = new Limiter({
      policies: [
        { name: 'reports', concurrent: 1 },
        { name: 'rl', quota: 60, window: 60, burst: 1, queue: { limit: 5, maxWaitMs: 10_000 } },
      ],
      store,
      clock,
    });
    const http = createHttpLimiter({
      limiter,
      rules: [{ path: '/api/reports/*', policies: ['rl', 'reports'] }],
      headers: 'draft-11',
    });
    const slot = [{ policy: limiter.policy('reports'), key: 'ip:192.0.2.1' }];
    const free = () => store.peek(slot, 1).outcomes[0].remaining;
    const a = http.evaluate(request('/api/reports/a')) as Verdict;
    expect(a.action).toBe('allow');
    // B waits a second for its token; while it waits, A's is the only slot held.
    const b = http.evaluate(request('/api/reports/b')) as Promise<Verdict>;
    a.observer?.end(END);
    expect(free()).toBe(1);
    await turns();
    clock.advance(1000);
    const admitted = await b;
    expect(admitted.action).toBe('allow');
    expect(free()).toBe(0);
    // C waits too, and finds the slot still held by B when its wait ends: refused, its token given back.
    const c = http.evaluate(request('/api/reports/c')) as Promise<Verdict>;
    await turns();
    clock.advance(1000);
    const refused = await c;
    expect(refused.status).toBe(429);
    expect(JSON.parse(refused.body as string)['violated-policies']).toEqual(['reports']);
    // The token it waited for is back: the headers say what the buckets hold after the refusal.
    expect(refused.headers).toContainEqual(['RateLimit', '"rl";r=1;t=0, "reports";r=0']);
    expect(refused.headers).toContainEqual(['Retry-After', '1']);
    admitted.observer?.end(END);
    expect(free()).toBe(1);
  });

  it('through node:http: 200 concurrent clients, never more than N in flight at the handler, all slots back', async () => {
    const N = 3;
    const { http } = limiterWith(N);
    let inFlight = 0;
    let most = 0;
    const held: ServerResponse[] = [];
    let release!: () => void;
    const allHeld = new Promise<void>((r) => {
      release = r;
    });
    const handler = (_req: IncomingMessage, res: ServerResponse) => {
      inFlight++;
      most = Math.max(most, inFlight);
      res.on('close', () => inFlight--);
      held.push(res);
      if (held.length === N) release();
    };
    const s = await listen(createServer(withRateLimit(http, handler)));
    try {
      const early: number[] = [];
      let refusedAll!: () => void;
      const allRefused = new Promise<void>((r) => {
        refusedAll = r;
      });
      const answers = Array.from({ length: 200 }, () =>
        get(`${s.url}/api/reports/x`).then((status) => {
          early.push(status);
          if (early.length === 200 - N) refusedAll();
          return status;
        }),
      );
      await allHeld;
      // The handler holds N requests: every other one of the 200 is answered (refused) while they run.
      await allRefused;
      expect(early).toEqual(Array(200 - N).fill(429));
      for (const res of held.splice(0)) res.end('done');
      const statuses = await Promise.all(answers);
      expect(statuses.filter((x) => x === 200)).toHaveLength(N);
      expect(most).toBe(N);
      // Every slot came back: N more requests are admitted at once.
      const again = Promise.all(Array.from({ length: N }, () => get(`${s.url}/api/reports/y`)));
      await new Promise<void>((r) => {
        const wait = () => (held.length === N ? r() : setImmediate(wait));
        wait();
      });
      for (const res of held.splice(0)) res.end('done');
      expect(await again).toEqual(Array(N).fill(200));
    } finally {
      for (const res of held) res.end();
      await s.close();
    }
  });
});
