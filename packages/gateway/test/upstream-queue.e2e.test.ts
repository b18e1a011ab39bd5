import { describe, expect, it, vi } from 'vitest';
import { send } from './support.js';
import { queueHarness } from './upstream-queue-harness.js';

// Slow but legal request bodies (D-G47 lets 10 MB at 500 bytes per second run for hours) must not leave every
// other request waiting for an upstream connection without end: a wait for a connection is bounded by
// `upstream.queueTimeout`, and one client streams at most `upstream.maxBodiesPerClient` bodies at once.

const { agent, holdUpstream, logLine, raw, running, start, takeOnlyConnection, upstream } = queueHarness();

/** A POST whose declared body is `length` bytes, of which only `sent` are written. */
function trickledPost(base: string, path: string, length: number, sent: number, extraHeaders = '') {
  return raw(
    base,
    `POST ${path} HTTP/1.1\r\nhost: example.com\r\ncontent-length: ${length}\r\n${extraHeaders}\r\n${'x'.repeat(sent)}`,
  );
}

async function metric(base: string, name: string): Promise<string | undefined> {
  const text = (await send(agent, `${base}/metrics`)).text;
  return text.split('\n').find((l) => l.startsWith(`${name} `) || l.startsWith(`${name}{`));
}

describe('upstream.queueTimeout', () => {
  it('answers 503 upstream_queue_timeout with Retry-After when no upstream connection frees in time', async () => {
    const { base, hold, first } = await takeOnlyConnection('100ms');

    const r = await send(agent, `${base}/other?secret=1`, { headers: { 'x-request-id': 'queued-1' } });
    expect(r.status).toBe(503);
    expect(r.headers['content-type']).toBe('application/problem+json');
    expect(r.headers['retry-after']).toBe('1');
    expect(r.headers['cache-control']).toBe('no-store');
    // The rate-limit headers of the admitted request are kept, as on the gateway's 502 and 504.
    expect(r.headers['ratelimit-policy']).toBeDefined();
    expect(r.json()).toEqual({
      type: 'about:blank',
      title: 'Service Unavailable',
      status: 503,
      detail: 'No upstream connection became free within 0.1 s.',
      instance: '/other',
      code: 'upstream_queue_timeout',
      correlation_id: 'queued-1',
    });
    await vi.waitFor(() =>
      expect(logLine('queued-1')).toMatchObject({ status: 503, outcome: 'upstream_queue_timeout' }),
    );
    expect(await metric(base, 'sluice_upstream_queue_timeouts_total')).toBe(
      'sluice_upstream_queue_timeouts_total 1',
    );

    // The request that timed out left the queue: once the connection frees, the next request gets it and the
    // upstream never sees the one answered with 503.
    hold.release();
    expect((await first).status).toBe(200);
    const after = await send(agent, `${base}/after`);
    expect(after.status).toBe(200);
    expect(upstream().seen.map((s) => s.url)).toEqual(['/hold', '/after']);
  });

  it('drops a queued request whose client went away without it costing the upstream connection', async () => {
    const { base, hold, first, held: heldReq } = await takeOnlyConnection('30s');

    const gone = raw(base, 'GET /gone HTTP/1.1\r\nhost: example.com\r\nx-request-id: gone-1\r\n\r\n');
    // Admitted and waiting for the connection (no answer yet), then the client leaves.
    await vi.waitFor(() => expect(running()?.gateway.inflight).toBe(2));
    gone.socket.destroy();
    // Its response closed: it left the line then.
    await vi.waitFor(() => expect(running()?.gateway.inflight).toBe(1));

    hold.release();
    expect((await first).status).toBe(200);
    const after = await send(agent, `${base}/after`);
    expect(after.status).toBe(200);
    expect(upstream().seen.map((s) => s.url)).toEqual(['/hold', '/after']);
    // The same keep-alive connection: the abandoned request was never written on it, nor did it cut it.
    expect(upstream().seen[1].socket).toBe(heldReq.socket);
  });

  it('answers a WebSocket upgrade that finds no free connection in time the same way', async () => {
    const { base, hold, first } = await takeOnlyConnection('100ms');
    const ws = raw(
      base,
      'GET /socket HTTP/1.1\r\nhost: example.com\r\nconnection: upgrade\r\nupgrade: websocket\r\n' +
        'sec-websocket-version: 13\r\nsec-websocket-key: dGhlIHNhbXBsZSBub25jZQ==\r\nx-request-id: ws-1\r\n\r\n',
    );
    await ws.closed;
    const answer = ws.answer();
    const end = answer.indexOf('\r\n\r\n');
    expect(answer.split('\r\n')[0]).toBe('HTTP/1.1 503 Service Unavailable');
    expect(answer.slice(0, end).toLowerCase()).toContain('\r\nretry-after: 1\r\n');
    expect(JSON.parse(answer.slice(end + 4))).toMatchObject({
      code: 'upstream_queue_timeout',
      correlation_id: 'ws-1',
    });
    hold.release();
    await first;
    expect(upstream().seen.map((s) => s.url)).toEqual(['/hold']);
  });

  it('lets a request that waits less than queueTimeout through', async () => {
    const { base, hold, first } = await takeOnlyConnection('30s');
    const second = send(agent, `${base}/second`);
    await vi.waitFor(() => expect(running()?.gateway.inflight).toBe(2));
    hold.release();
    expect((await first).status).toBe(200);
    const r = await second;
    expect(r.status).toBe(200);
    expect(r.json()).toMatchObject({ url: '/second' });
  });
});

describe('upstream.maxBodiesPerClient', () => {
  it('refuses a body past the cap with 429 too_many_request_bodies; bodiless requests still pass', async () => {
    const base = await start('upstream: { connections: 4, maxBodiesPerClient: 1, queueTimeout: 2s }\n');
    const hold = holdUpstream('/upload');
    // A body that keeps arriving slowly (legal under D-G47) holds the client's one place.
    const slow = trickledPost(base, '/upload/slow', 1000, 1);
    await hold.arrived();

    const r = await send(agent, `${base}/upload/second`, {
      method: 'POST',
      headers: { 'x-request-id': 'cap-1' },
      body: 'hello',
    });
    expect(r.status).toBe(429);
    expect(r.headers['content-type']).toBe('application/problem+json');
    expect(r.headers['retry-after']).toBe('2');
    expect(r.json()).toEqual({
      type: 'about:blank',
      title: 'Too Many Requests',
      status: 429,
      detail: 'This client is already sending 1 request body to the upstream, the most it may send at once.',
      instance: '/upload/second',
      code: 'too_many_request_bodies',
      correlation_id: 'cap-1',
    });
    await vi.waitFor(() => expect(logLine('cap-1')).toMatchObject({ status: 429, outcome: 'client_bodies' }));
    expect(await metric(base, 'sluice_upstream_bodies_refused_total')).toBe(
      'sluice_upstream_bodies_refused_total 1',
    );
    expect(upstream().seen.map((s) => s.url)).toEqual(['/upload/slow']);

    // Requests without a body do not count.
    expect((await send(agent, `${base}/read`)).status).toBe(200);

    // Once the slow body has arrived whole, its place is free again, even while its response is pending.
    slow.socket.write('x'.repeat(999));
    await vi.waitFor(() => expect(upstream().seen[0].complete).toBe(true));
    const next = send(agent, `${base}/upload/next`, { method: 'POST', body: 'hello' });
    await hold.arrived();
    hold.release();
    expect((await next).status).toBe(200);
  });

  it('counts bodies per client address behind trusted proxies, not per proxy', async () => {
    const base = await start(
      'server: { trustedProxies: [loopback] }\nupstream: { connections: 4, maxBodiesPerClient: 1 }\n',
    );
    const hold = holdUpstream('/upload');
    trickledPost(base, '/upload/a', 1000, 1, 'x-forwarded-for: 198.51.100.1\r\n');
    await hold.arrived();
    // Another client behind the same load balancer: its own place.
    trickledPost(base, '/upload/b', 1000, 1, 'x-forwarded-for: 198.51.100.2\r\n');
    await hold.arrived();
    const again = await send(agent, `${base}/upload/c`, {
      method: 'POST',
      headers: { 'x-forwarded-for': '198.51.100.1' },
      body: 'hello',
    });
    expect(again.status).toBe(429);
    expect(upstream().seen.map((s) => s.url)).toEqual(['/upload/a', '/upload/b']);
  });

  it('keeps the pool for other clients while one client streams as many slow bodies as it may', async () => {
    // Two connections, one body per client: a client trickling bodies holds one connection at most, and another
    // client's request is served on the other.
    const base = await start('upstream: { connections: 2, maxBodiesPerClient: 1, queueTimeout: 30s }\n');
    const hold = holdUpstream('/upload');
    trickledPost(base, '/upload/1', 1000, 1);
    await hold.arrived();
    // Declared past the 1 MiB a refusal reads and drops (a smaller body keeps the connection, as after a
    // rate-limit denial; upstream-queue-sharing.e2e.test.ts).
    const refused = trickledPost(base, '/upload/2', 2_000_000, 1);
    await refused.closed;
    expect(refused.answer().split('\r\n')[0]).toBe('HTTP/1.1 429 Too Many Requests');
    // The rest of the refused body is unread: the connection closes after the answer.
    expect(refused.answer().toLowerCase()).toContain('\r\nconnection: close\r\n');
    const other = await send(agent, `${base}/other`);
    expect(other.status).toBe(200);
  });
});
