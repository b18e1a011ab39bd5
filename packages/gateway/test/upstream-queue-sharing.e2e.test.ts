import { describe, expect, it, vi } from 'vitest';
import { send } from './support.js';
import { queueHarness } from './upstream-queue-harness.js';

// What one client may hold of the upstream pool beyond D-G59 (D-G66): bodies hold at most `upstream.maxBodies`
// connections, so requests without a body always find one; a connection serves its pipelined requests one at a
// time; `100 Continue` is sent once the request has its connection; a refused small body keeps the connection;
// a request whose client left before any answer is logged as such.

const { agent, holdUpstream, logLine, raw, running, start, takeOnlyConnection, upstream } = queueHarness();

/** The status lines of the answers in `text`, in order (a body without a line break runs into the next one). */
function statusLines(text: string): string[] {
  return text.match(/HTTP\/1\.1 \d{3} [^\r]*/g) ?? [];
}

/** A POST from the client `xff` (the gateway trusts loopback) declaring `length` bytes and sending `sent`. */
function trickle(base: string, path: string, xff: string, length = 1000, sent = 1, extra = '') {
  return raw(
    base,
    `POST ${path} HTTP/1.1\r\nhost: example.com\r\nx-forwarded-for: ${xff}\r\ncontent-length: ${length}\r\n${extra}\r\n${'x'.repeat(sent)}`,
  );
}

describe('upstream.maxBodies', () => {
  it('keeps the connections beyond the share for requests without a body, whatever the number of uploaders', async () => {
    // Four connections, half for bodies by default; no cap per client, so only the share stands in the way.
    const base = await start(
      'server: { trustedProxies: [loopback] }\nupstream: { connections: 4, maxBodiesPerClient: 0, queueTimeout: 300ms }\n',
    );
    const hold = holdUpstream('/upload');
    trickle(base, '/upload/a', '198.51.100.1');
    await hold.arrived();
    trickle(base, '/upload/b', '198.51.100.2');
    await hold.arrived();

    // A third uploader, from yet another address, waits for a place of the share and gets the queue's 503.
    const third = trickle(base, '/upload/c', '198.51.100.3', 1000, 1, 'x-request-id: share-1\r\n');
    await vi.waitFor(() => expect(third.answer()).toContain('"code":"upstream_queue_timeout"'));
    expect(statusLines(third.answer())).toEqual(['HTTP/1.1 503 Service Unavailable']);
    await vi.waitFor(() =>
      expect(logLine('share-1')).toMatchObject({ status: 503, outcome: 'upstream_queue_timeout' }),
    );

    // Requests without a body are served on the connections kept for them, two at once.
    const reads = await Promise.all([send(agent, `${base}/read/1`), send(agent, `${base}/read/2`)]);
    expect(reads.map((r) => r.status)).toEqual([200, 200]);
    expect(
      upstream()
        .seen.map((s) => s.url)
        .sort(),
    ).toEqual(['/read/1', '/read/2', '/upload/a', '/upload/b']);
  });

  it('gives a place of the share back once the body has arrived whole', async () => {
    const base = await start(
      'upstream: { connections: 2, maxBodies: 1, maxBodiesPerClient: 0, queueTimeout: 30s }\n',
    );
    const hold = holdUpstream('/upload');
    const slow = trickle(base, '/upload/a', '198.51.100.1', 1000, 1);
    await hold.arrived();
    const next = send(agent, `${base}/upload/b`, { method: 'POST', body: 'hello' });
    await vi.waitFor(() => expect(running()?.gateway.inflight).toBe(2));
    // The first body completes; its request still waits for the upstream's answer, yet the share is free.
    slow.socket.write('x'.repeat(999));
    const second = await hold.arrived();
    expect(second.url).toBe('/upload/b');
    hold.release();
    expect((await next).status).toBe(200);
  });
});

describe('pipelined requests', () => {
  it('are served one at a time per connection, so one connection holds one upstream connection', async () => {
    const base = await start('upstream: { connections: 2, queueTimeout: 300ms }\n');
    const hold = holdUpstream('/hold');
    let pipelined = '';
    for (const n of [1, 2, 3]) pipelined += `GET /hold/${n} HTTP/1.1\r\nhost: example.com\r\n\r\n`;
    const conn = raw(base, pipelined);
    await hold.arrived();

    // The second connection is free for another client while the first request of the pipeline is pending.
    const other = await send(agent, `${base}/other`);
    expect(other.status).toBe(200);
    expect(upstream().seen.map((s) => s.url)).toEqual(['/hold/1', '/other']);

    // Each answer lets the next pipelined request go upstream, and the answers come back in order.
    for (const n of [2, 3]) {
      hold.release();
      expect((await hold.arrived()).url).toBe(`/hold/${n}`);
    }
    hold.release();
    await vi.waitFor(() => expect(statusLines(conn.answer())).toHaveLength(3));
    expect(statusLines(conn.answer())).toEqual(Array(3).fill('HTTP/1.1 200 OK'));
    expect(upstream().seen.map((s) => s.url)).toEqual(['/hold/1', '/other', '/hold/2', '/hold/3']);
  });
});

describe('Expect: 100-continue', () => {
  it('is refused without 100 Continue when the client is at its cap of bodies', async () => {
    const base = await start('upstream: { connections: 4, maxBodiesPerClient: 1 }\n');
    const hold = holdUpstream('/upload');
    raw(base, 'POST /upload/a HTTP/1.1\r\nhost: example.com\r\ncontent-length: 1000\r\n\r\nx');
    await hold.arrived();
    const r = raw(
      base,
      'POST /upload/b HTTP/1.1\r\nhost: example.com\r\ncontent-length: 5\r\nexpect: 100-continue\r\n\r\n',
    );
    await r.closed;
    expect(statusLines(r.answer())).toEqual(['HTTP/1.1 429 Too Many Requests']);
    // The client still holds its body: the connection cannot carry another request.
    expect(r.answer().toLowerCase()).toContain('\r\nconnection: close\r\n');
  });

  it('gets 100 Continue only once the request has its upstream connection', async () => {
    const { base, hold, first } = await takeOnlyConnection('30s');
    const r = raw(
      base,
      'POST /echo HTTP/1.1\r\nhost: example.com\r\ncontent-length: 5\r\nexpect: 100-continue\r\n\r\n',
    );
    await vi.waitFor(() => expect(running()?.gateway.inflight).toBe(2));
    // Waiting for the connection: nothing asked of the client yet.
    expect(r.answer()).toBe('');
    hold.release();
    expect((await first).status).toBe(200);
    await vi.waitFor(() => expect(r.answer()).toContain('HTTP/1.1 100 Continue'));
    r.socket.write('hello');
    await vi.waitFor(() => expect(statusLines(r.answer())).toHaveLength(2));
    expect(statusLines(r.answer())).toEqual(['HTTP/1.1 100 Continue', 'HTTP/1.1 200 OK']);
  });

  it('is answered 503 without 100 Continue when no connection frees in time', async () => {
    const { base, hold, first } = await takeOnlyConnection('200ms');
    const r = raw(
      base,
      'POST /echo HTTP/1.1\r\nhost: example.com\r\ncontent-length: 5\r\nexpect: 100-continue\r\n\r\n',
    );
    await r.closed;
    expect(statusLines(r.answer())).toEqual(['HTTP/1.1 503 Service Unavailable']);
    hold.release();
    await first;
    expect(upstream().seen.map((s) => s.url)).toEqual(['/hold']);
  });
});

describe('a refused small body', () => {
  for (const [framing, body] of [
    ['content-length: 5', 'hello'],
    ['transfer-encoding: chunked', '5\r\nhello\r\n0\r\n\r\n'],
  ] as const) {
    it(`keeps the connection for the pipelined request behind it (${framing.split(':')[0]})`, async () => {
      const base = await start('upstream: { connections: 4, maxBodiesPerClient: 1 }\n');
      const hold = holdUpstream('/upload');
      raw(base, 'POST /upload/a HTTP/1.1\r\nhost: example.com\r\ncontent-length: 1000\r\n\r\nx');
      await hold.arrived();
      const r = raw(
        base,
        `POST /upload/b HTTP/1.1\r\nhost: example.com\r\n${framing}\r\n\r\n${body}` +
          'GET /after HTTP/1.1\r\nhost: example.com\r\nconnection: close\r\n\r\n',
      );
      await r.closed;
      expect(statusLines(r.answer())).toEqual(['HTTP/1.1 429 Too Many Requests', 'HTTP/1.1 200 OK']);
      expect(r.answer().split('\r\n\r\n')[0].toLowerCase()).not.toContain('connection: close');
      expect(upstream().seen.map((s) => s.url)).toEqual(['/upload/a', '/after']);
    });
  }
});

describe('the request log', () => {
  it('says 499 client_closed for an upload its client abandoned before any answer', async () => {
    const base = await start('upstream: { connections: 4 }\n');
    const hold = holdUpstream('/upload');
    const r = raw(
      base,
      'POST /upload/a HTTP/1.1\r\nhost: example.com\r\ncontent-length: 1000\r\nx-request-id: gone-1\r\n\r\nxx',
    );
    const upstreamReq = await hold.arrived();
    r.socket.destroy();
    await vi.waitFor(() =>
      expect(logLine('gone-1')).toMatchObject({ status: 499, outcome: 'client_closed' }),
    );
    // The upstream request was aborted with it.
    await vi.waitFor(() => expect(upstreamReq.destroyed).toBe(true));
  });

  it('says 499 client_closed for a request whose client left while it waited for a connection', async () => {
    const { base, hold, first } = await takeOnlyConnection('30s');
    const r = raw(base, 'GET /gone HTTP/1.1\r\nhost: example.com\r\nx-request-id: gone-2\r\n\r\n');
    await vi.waitFor(() => expect(running()?.gateway.inflight).toBe(2));
    r.socket.destroy();
    await vi.waitFor(() =>
      expect(logLine('gone-2')).toMatchObject({ status: 499, outcome: 'client_closed' }),
    );
    hold.release();
    await first;
  });
});
