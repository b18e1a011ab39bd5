import { afterEach, describe, expect, it } from 'vitest';
import { type RateLimitServer, startRateLimitServer } from '../../test/client/rate-limit-server.js';
import type { Clock } from '../core/clock.js';
import { ManualClock } from '../core/manual-clock.js';
import type { PolicyOptions } from '../core/policy.js';
import { type ClientOptions, createClient, RateLimitExceededError, type RateLimitSnapshot } from './index.js';

/**
 * The client's clock: the server's ManualClock, advanced by exactly each wait the client asks for, so backoff is
 * observed without sleeping and the server's buckets refill by the same amount.
 */
function steppingClock(clock: ManualClock) {
  const sleeps: number[] = [];
  const stepping: Clock = {
    now: () => clock.now(),
    sleep(ms, signal) {
      sleeps.push(ms);
      const done = clock.sleep(ms, signal);
      clock.advance(Math.max(0, ms));
      return done;
    },
  };
  return { sleeps, clock: stepping };
}

let server: RateLimitServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

async function setup(policies: PolicyOptions[], options: ClientOptions = {}, config = {}) {
  const manual = new ManualClock(10_000);
  server = await startRateLimitServer(manual, policies, config);
  const { sleeps, clock } = steppingClock(manual);
  const client = createClient({ baseUrl: server.url, clock, random: () => 0.5, ...options });
  return { manual, server, sleeps, client, statuses: () => server!.requests.map((r) => r.status) };
}

const perSecond = (burst = 1): PolicyOptions => ({ name: 'api', quota: 60, window: 60, burst });

async function rejection(p: Promise<unknown>): Promise<RateLimitExceededError> {
  const e = await p.then(
    () => {
      throw new Error('expected a rejection');
    },
    (error: unknown) => error,
  );
  expect(e).toBeInstanceOf(RateLimitExceededError);
  return e as RateLimitExceededError;
}

describe('createClient against a real server', () => {
  it('retries a 429 after the Retry-After seconds and returns the success', async () => {
    const { client, sleeps, statuses } = await setup([perSecond()]);
    expect((await client.fetch('/a')).status).toBe(200);
    const res = await client.fetch('/a');
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ ok: true, path: '/a' });
    expect(statuses()).toEqual([200, 429, 200]);
    expect(sleeps).toEqual([1000]);
  });

  it('honours Retry-After as an HTTP-date, measured against the response Date', async () => {
    const { client, sleeps, statuses } = await setup(
      [{ name: 'api', quota: 6, window: 60, burst: 1 }],
      { wallClock: () => 0 }, // a wildly wrong local clock: the response's Date must be used
      { retryAfter: 'date' },
    );
    await client.fetch('/a');
    expect((await client.fetch('/a')).status).toBe(200);
    expect(statuses()).toEqual([200, 429, 200]);
    expect(sleeps).toEqual([10_000]);
  });

  it('honours an HTTP-date Retry-After without a Date field by the local wall clock', async () => {
    const manual = new ManualClock(0);
    server = await startRateLimitServer(manual, [{ name: 'api', quota: 6, window: 60, burst: 1 }], {
      retryAfter: 'date',
      sendDate: false,
    });
    const { sleeps, clock } = steppingClock(manual);
    const s = server;
    const client = createClient({ baseUrl: s.url, clock, wallClock: () => s.wallNow() });
    await client.fetch('/a');
    expect((await client.fetch('/a')).status).toBe(200);
    expect(sleeps).toEqual([10_000]);
  });

  it('backs off with full jitter when there is no Retry-After: random x min(cap, 1 s x 2^n)', async () => {
    const { client, sleeps, statuses } = await setup([perSecond()], { random: () => 0.5 }, { busy: 3 });
    expect((await client.fetch('/a')).status).toBe(200);
    expect(statuses()).toEqual([503, 503, 503, 200]);
    expect(sleeps).toEqual([500, 1000, 2000]);
  });

  it('caps the backoff ceiling at maxBackoffSeconds', async () => {
    const { client, sleeps } = await setup(
      [perSecond()],
      { random: () => 0.999, maxBackoffSeconds: 3, maxRetries: 4 },
      { busy: 4 },
    );
    expect((await client.fetch('/a')).status).toBe(200);
    expect(sleeps).toEqual([999, 1998, 2997, 2997]);
  });

  it('lets Retry-After win over the computed backoff, also on 503', async () => {
    const { client, sleeps } = await setup(
      [perSecond()],
      { random: () => 0 },
      { busy: 2, busyRetryAfter: 7 },
    );
    expect((await client.fetch('/a')).status).toBe(200);
    expect(sleeps).toEqual([7000, 7000]);
  });

  it('throws with the problem body when Retry-After exceeds maxBackoffSeconds, without waiting', async () => {
    const { client, sleeps, statuses } = await setup([{ name: 'hourly', quota: 1, window: 3600, burst: 1 }]);
    await client.fetch('/a');
    const e = await rejection(client.fetch('/a'));
    expect(e.code).toBe('ERR_RATE_LIMIT_EXCEEDED');
    expect(e.reason).toBe('retry-after-exceeds-cap');
    expect(e.status).toBe(429);
    expect(e.retryAfterSeconds).toBe(3600);
    expect(e.attempts).toBe(1);
    expect(e.problem).toMatchObject({
      status: 429,
      title: 'Rate Limit Exceeded',
      retryAfter: 3600,
      limit: 1,
    });
    expect(await e.response?.json()).toEqual(e.problem);
    expect(e.message).toContain('maxBackoffSeconds (60)');
    expect(sleeps).toEqual([]);
    expect(statuses()).toEqual([200, 429]);
  });

  it('gives up at once on a Retry-After too large to represent, read as 2^31 seconds', async () => {
    const manual = new ManualClock(0);
    const { sleeps, clock } = steppingClock(manual);
    let calls = 0;
    const fetch = async () => {
      calls++;
      return new Response('', { status: 429, headers: { 'retry-after': '99999999999999999999' } });
    };
    const client = createClient({ baseUrl: 'http://api.example.test', fetch, clock, random: () => 0 });
    const e = await rejection(client.fetch('/a'));
    expect(e.reason).toBe('retry-after-exceeds-cap');
    expect(e.retryAfterSeconds).toBe(2147483648);
    expect([calls, sleeps]).toEqual([1, []]);
  });

  it('never asks its clock for a wait longer than a timer can hold, at the largest maxBackoffSeconds', async () => {
    const manual = new ManualClock(0);
    const { sleeps, clock } = steppingClock(manual);
    let calls = 0;
    const fetch = async () =>
      ++calls === 1
        ? new Response('', { status: 429, headers: { 'retry-after': '2147484' } })
        : new Response('ok');
    const client = createClient({
      baseUrl: 'http://api.example.test',
      fetch,
      clock,
      random: () => 0.999999,
      maxBackoffSeconds: 2147483,
      initialBackoffSeconds: 2147483,
    });
    // 2147484 s is one second above the cap: it ends at once instead of a timer that overflows.
    expect((await rejection(client.fetch('/a'))).reason).toBe('retry-after-exceeds-cap');
    expect(sleeps).toEqual([]);
    calls = 1;
    const retried = createClient({
      baseUrl: 'http://api.example.test',
      fetch: async () => (++calls % 2 === 0 ? new Response('', { status: 503 }) : new Response('ok')),
      clock,
      random: () => 0.999999,
      maxBackoffSeconds: 2147483,
      initialBackoffSeconds: 2147483,
    });
    expect((await retried.fetch('/a')).status).toBe(200);
    expect(sleeps).toHaveLength(1);
    expect(sleeps[0]).toBeLessThanOrEqual(2 ** 31 - 1);
  });

  it('gives up after maxRetries with the last problem body', async () => {
    const { client, sleeps, statuses } = await setup([perSecond()], {}, { busy: 10, busyRetryAfter: 1 });
    const e = await rejection(client.fetch('/a'));
    expect(e.reason).toBe('retries-exhausted');
    expect(e.status).toBe(503);
    expect(e.attempts).toBe(4);
    expect(e.problem).toMatchObject({ status: 503, detail: 'shedding load' });
    expect(sleeps).toEqual([1000, 1000, 1000]);
    expect(statuses()).toEqual([503, 503, 503, 503]);
  });

  it('returns the response untouched when retryOnRateLimit is false', async () => {
    const { client, statuses } = await setup([perSecond()], { retryOnRateLimit: false });
    await client.fetch('/a');
    const res = await client.fetch('/a');
    expect(res.status).toBe(429);
    expect(res.headers.get('retry-after')).toBe('1');
    expect(statuses()).toEqual([200, 429]);
  });

  it('retries 429 for POST (not processed) but 503 only for idempotent requests', async () => {
    const { client, statuses, server: s } = await setup([perSecond()]);
    await client.fetch('/a');
    expect((await client.fetch('/a', { method: 'POST', body: 'hello' })).status).toBe(200);
    expect(statuses()).toEqual([200, 429, 200]);
    // The body was sent again, intact.
    expect(s.requests.slice(1).map((r) => r.body)).toEqual(['hello', 'hello']);

    s.config.busy = 1;
    s.config.busyRetryAfter = 1;
    expect((await client.fetch('/b', { method: 'POST', body: 'x' })).status).toBe(503);
    s.config.busy = 1;
    expect((await client.fetch('/c', { method: 'PUT', body: 'x' })).status).toBe(200);
    s.config.busy = 1;
    const keyed = await client.fetch('/d', {
      method: 'POST',
      body: 'x',
      headers: { 'Idempotency-Key': 'k1' },
    });
    expect(keyed.status).toBe(200);
    expect(s.requests.filter((r) => r.path === '/d').map((r) => r.idempotencyKey)).toEqual(['k1', 'k1']);
  });

  it('retries 503 for POST when retryNonIdempotent is set', async () => {
    const { client } = await setup([perSecond()], { retryNonIdempotent: true }, { busy: 1 });
    expect((await client.fetch('/a', { method: 'POST', body: 'x' })).status).toBe(200);
  });

  it('lets shouldRetry overrule the decision and onRetry observe each retry', async () => {
    const seen: unknown[] = [];
    const { client, statuses } = await setup([perSecond()], {
      shouldRetry: (c) => (c.method === 'DELETE' ? false : undefined),
      onRetry: (c) => seen.push({ attempt: c.attempt, status: c.response?.status, delayMs: c.delayMs }),
    });
    await client.fetch('/a');
    expect((await client.fetch('/a', { method: 'DELETE' })).status).toBe(429);
    expect((await client.fetch('/a')).status).toBe(200);
    expect(seen).toEqual([{ attempt: 0, status: 429, delayMs: 1000 }]);
    expect(statuses()).toEqual([200, 429, 429, 200]);
  });

  it('retries a network failure only when shouldRetry says so', async () => {
    const { client, server: s } = await setup([perSecond()]);
    const url = s.url;
    await s.close();
    server = undefined;
    await expect(client.fetch('/a')).rejects.toThrow(TypeError);
    const stepping = steppingClock(new ManualClock());
    let calls = 0;
    const contexts: unknown[] = [];
    const retrying = createClient({
      baseUrl: url,
      clock: stepping.clock,
      random: () => 0.5,
      fetch: (input, init) => {
        calls++;
        return fetch(input, init);
      },
      shouldRetry: (c) => {
        contexts.push({ attempt: c.attempt, retry: c.retry, hasError: c.error instanceof TypeError });
        return true;
      },
      maxRetries: 2,
    });
    await expect(retrying.fetch('/a')).rejects.toThrow(TypeError);
    expect(calls).toBe(3);
    expect(stepping.sleeps).toEqual([500, 1000]);
    expect(contexts).toEqual([
      { attempt: 0, retry: false, hasError: true },
      { attempt: 1, retry: false, hasError: true },
    ]);
  });

  it('never replays a stream body: it throws instead of retrying silently', async () => {
    const { client, statuses, server: s } = await setup([perSecond()]);
    await client.fetch('/a');
    const body = new ReadableStream<Uint8Array>({
      start(c) {
        c.enqueue(new TextEncoder().encode('streamed'));
        c.close();
      },
    });
    const e = await rejection(client.fetch('/a', { method: 'POST', body, duplex: 'half' } as RequestInit));
    expect(e.reason).toBe('body-not-replayable');
    expect(e.status).toBe(429);
    expect(statuses()).toEqual([200, 429]);
    expect(s.requests[1].body).toBe('streamed');
  });

  it('retries a body-less Request object, and refuses to replay a Request that carries a body', async () => {
    const { client, statuses, server: s } = await setup([perSecond()]);
    await client.fetch('/a');
    expect((await client.fetch(new Request(`${s.url}/r`))).status).toBe(200);
    await client.fetch('/a');
    const e = await rejection(client.fetch(new Request(`${s.url}/r`, { method: 'POST', body: 'b' })));
    expect(e.reason).toBe('body-not-replayable');
    // The second plain fetch was retried once (429 then 200); the Request with a body was not.
    expect(statuses()).toEqual([200, 429, 200, 429, 200, 429]);
  });

  it('waits pre-emptively when a policy is known to be empty instead of spending a request on a 429', async () => {
    const { client, sleeps, statuses } = await setup([perSecond(2)], { preemptiveWait: true });
    await client.fetch('/a');
    await client.fetch('/a'); // r=0 now
    expect((await client.fetch('/a')).status).toBe(200);
    expect(sleeps).toEqual([1000]); // one token at 60 per minute, not t (the time until full)
    expect(statuses()).toEqual([200, 200, 200]);
  });

  it('without pre-emptive waiting the same sequence spends a request on a 429', async () => {
    const { client, statuses } = await setup([perSecond(2)]);
    for (let i = 0; i < 3; i++) await client.fetch('/a');
    expect(statuses()).toEqual([200, 200, 429, 200]);
  });

  it('throws wait-exceeds-cap and sends nothing when the known wait is beyond the cap', async () => {
    const { client, statuses } = await setup([{ name: 'hourly', quota: 1, window: 3600, burst: 1 }], {
      preemptiveWait: true,
    });
    await client.fetch('/a');
    const e = await rejection(client.fetch('/a'));
    expect(e.reason).toBe('wait-exceeds-cap');
    expect(e.status).toBeUndefined();
    expect(e.retryAfterSeconds).toBe(3600);
    expect(statuses()).toEqual([200]);
  });

  it('remembers a Retry-After for the origin when waiting pre-emptively', async () => {
    // No rate-limit fields: only the 429's Retry-After tells the client when the origin admits again.
    const { client, sleeps, statuses } = await setup(
      [perSecond()],
      { preemptiveWait: true, retryOnRateLimit: false },
      { form: 'none' },
    );
    await client.fetch('/a');
    expect((await client.fetch('/a')).status).toBe(429);
    expect((await client.fetch('/a')).status).toBe(200);
    expect(sleeps).toEqual([1000]);
    expect(statuses()).toEqual([200, 429, 200]);
  });
});

describe('AbortSignal', () => {
  async function frozen(policies: PolicyOptions[], options: ClientOptions = {}) {
    const manual = new ManualClock(0);
    server = await startRateLimitServer(manual, policies);
    const client = createClient({ baseUrl: server.url, clock: manual, ...options });
    return { manual, client, s: server };
  }
  const until = async (cond: () => boolean) => {
    while (!cond()) await new Promise((r) => setImmediate(r));
  };

  it('cancels a retry wait: rejects with the reason and sends nothing more', async () => {
    const { manual, client, s } = await frozen([perSecond()]);
    await client.fetch('/a');
    const controller = new AbortController();
    const pending = client.fetch('/a', { signal: controller.signal });
    await until(() => manual.pendingSleeps === 1);
    controller.abort();
    await expect(pending).rejects.toMatchObject({ name: 'AbortError' });
    manual.advance(5000);
    expect(s.requests.map((r) => r.status)).toEqual([200, 429]);
    expect(manual.pendingSleeps).toBe(0);
  });

  it('cancels a pre-emptive wait with a custom reason', async () => {
    const { manual, client, s } = await frozen([perSecond()], { preemptiveWait: true });
    await client.fetch('/a');
    const controller = new AbortController();
    const pending = client.fetch('/a', { signal: controller.signal });
    await until(() => manual.pendingSleeps === 1);
    const reason = new Error('user left the page');
    controller.abort(reason);
    await expect(pending).rejects.toBe(reason);
    expect(s.requests).toHaveLength(1);
  });

  it('rejects at once for an aborted signal, sending nothing', async () => {
    const { client, s } = await frozen([perSecond()]);
    await expect(client.fetch('/a', { signal: AbortSignal.abort() })).rejects.toMatchObject({
      name: 'AbortError',
    });
    expect(s.requests).toHaveLength(0);
  });

  it('uses the signal of a Request object', async () => {
    const { manual, client, s } = await frozen([perSecond()]);
    await client.fetch('/a');
    const controller = new AbortController();
    const pending = client.fetch(new Request(`${s.url}/a`, { signal: controller.signal }));
    await until(() => manual.pendingSleeps === 1);
    controller.abort();
    await expect(pending).rejects.toMatchObject({ name: 'AbortError' });
  });
});

describe('rate-limit state', () => {
  it('keeps the latest state per origin and policy, and tells subscribers', async () => {
    const {
      client,
      manual,
      server: s,
    } = await setup([
      { name: 'burst', quota: 60, window: 60, burst: 5 },
      { name: 'hourly', quota: 100, window: 3600 },
    ]);
    const snapshots: RateLimitSnapshot[] = [];
    const off = client.subscribe((snap) => snapshots.push(snap));
    await client.fetch('/a');
    await client.fetch('/a');
    const origin = new URL(s.url).origin;
    const entries = client.entries(origin);
    expect(
      entries.map((e) => [e.policy, e.remaining, e.quota, e.windowSeconds, e.resetSeconds, e.form]),
    ).toEqual([
      ['burst', 3, 60, 60, 2, 'ratelimit'],
      ['hourly', 98, 100, 3600, 72, 'ratelimit'],
    ]);
    // t counts until the bucket is full; the next request passes at once (r >= 1).
    expect(entries[0].fullAt).toBe(manual.now() + 2000);
    expect(entries[0].nextAt).toBe(manual.now());
    // Two requests from a full bucket of 5: r=3, t=2 at 1 per second bound the burst to exactly 5.
    expect([entries[0].capacity, entries[0].capacityMax]).toEqual([5, 5]);
    expect(snapshots).toHaveLength(2);
    expect(snapshots[1]).toMatchObject({ origin, now: manual.now() });
    off();
    await client.fetch('/a');
    expect(snapshots).toHaveLength(2);
    expect(client.entries()).toHaveLength(2);
    client.clear(origin);
    expect(client.entries()).toEqual([]);
  });

  it('reads the X-RateLimit-* form with an epoch reset and the policy name', async () => {
    const { client, server: s } = await setup(
      [{ name: 'standard', quota: 300, window: 60, burst: 50 }],
      {},
      {
        form: 'x-ratelimit',
      },
    );
    await client.fetch('/a');
    expect(client.entries(new URL(s.url).origin)).toMatchObject([
      { policy: 'standard', remaining: 49, quota: 300, resetSeconds: 1, form: 'x-ratelimit' },
    ]);
  });

  it('reads the older RateLimit-Limit/Remaining/Reset form', async () => {
    const { client, server: s } = await setup(
      [{ name: 'api', quota: 100, window: 60 }],
      {},
      {
        form: 'ratelimit-legacy',
      },
    );
    await client.fetch('/a');
    expect(client.entries(new URL(s.url).origin)).toMatchObject([
      { policy: '', remaining: 99, quota: 100, windowSeconds: 60, resetSeconds: 1, form: 'ratelimit-legacy' },
    ]);
  });

  it('reports a throwing subscriber without failing the request', async () => {
    const { client } = await setup([perSecond()]);
    const errors: unknown[] = [];
    const original = console.error;
    console.error = (...args: unknown[]) => errors.push(args[1]);
    try {
      client.subscribe(() => {
        throw new Error('broken widget');
      });
      expect((await client.fetch('/a')).status).toBe(200);
    } finally {
      console.error = original;
    }
    expect(errors).toHaveLength(1);
  });
});
