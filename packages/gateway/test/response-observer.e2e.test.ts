import { connect, type Socket } from 'node:net';
import { join } from 'node:path';
import type { HttpLimiter, ResponseEnd, ResponseObserver, Verdict } from 'sluice/http';
import { request as undiciRequest } from 'undici';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { GatewayRequest } from '../src/admission/identify-caller.js';
import {
  client,
  send,
  startGateway,
  startUpstream,
  type TestGateway,
  type TestUpstream,
  tempDir,
} from './support.js';

/** An observer that records what the gateway feeds it, and resolves `ended` on its first end. */
class Recorder implements ResponseObserver {
  readonly wantsBody = true;
  heads: { status: number; cost: string | undefined }[] = [];
  bytes = 0;
  ends: ResponseEnd[] = [];
  readonly ended: Promise<ResponseEnd>;
  #resolve!: (e: ResponseEnd) => void;
  constructor() {
    this.ended = new Promise((r) => {
      this.#resolve = r;
    });
  }
  head(h: { status: number; get(n: string): string | undefined; remove(n: string): void }): void {
    this.heads.push({ status: h.status, cost: h.get('x-upstream-cost') });
    h.remove('x-upstream-cost');
  }
  body(chunk: Uint8Array): void {
    this.bytes += chunk.length;
  }
  end(e: ResponseEnd): void {
    this.ends.push(e);
    this.#resolve(e);
  }
}

/** Gives every allowed verdict of the gateway's runtime a fresh recorder, as a concurrency rule would. */
function observe(t: TestGateway): Recorder[] {
  const recorders: Recorder[] = [];
  const rt = t.gateway.runtime as { http: HttpLimiter<GatewayRequest> };
  const http = rt.http;
  const add = (v: Verdict): Verdict => {
    if (v.action !== 'allow') return v;
    const r = new Recorder();
    recorders.push(r);
    return { ...v, observer: r };
  };
  rt.http = {
    ...http,
    evaluate: (req: GatewayRequest) => {
      const v = http.evaluate(req);
      return v instanceof Promise ? v.then(add) : add(v as Verdict);
    },
  };
  return recorders;
}

/** Resolves after the event loop has turned a few times: whatever a second `end` would follow has happened. */
async function settle(): Promise<void> {
  for (let i = 0; i < 5; i++) await new Promise((r) => setImmediate(r));
}

const TIERS = `rateLimiting:
  defaultTier: free
  tiers:
    free: { requestsPerMinute: 600, burstLimit: 50 }
`;

describe('the proxy feeds a request observer and ends it exactly once', () => {
  const { dir, cleanup } = tempDir();
  const agent = client();
  let upstream: TestUpstream;
  let t: TestGateway | undefined;

  beforeAll(async () => {
    upstream = await startUpstream();
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

  async function start(extra = ''): Promise<Recorder[]> {
    t = await startGateway(join(dir, 'observer.yaml'), {
      yaml: `${TIERS}upstream:\n  url: ${upstream.url}\n${extra}`,
    });
    return observe(t);
  }

  it('a completed response: the upstream head before it goes out, the body, the request body, one end', async () => {
    const recorders = await start();
    // Two chunks and the end in one tick: all of them reach the client (the proxy corks the head with them).
    upstream.handler = (req, res) => {
      req.resume();
      req.on('end', () => {
        res.writeHead(201, { 'x-upstream-cost': '7', 'content-type': 'text/plain' });
        res.write('hello ');
        res.end('world');
      });
    };
    const r = await send(agent, `${t?.gateway.url}/api/x`, { method: 'POST', body: 'abcdef' });
    expect([r.status, r.text, r.headers['x-upstream-cost']]).toEqual([201, 'hello world', undefined]);
    await recorders[0].ended;
    await settle();
    expect(recorders[0].heads).toEqual([{ status: 201, cost: '7' }]);
    expect(recorders[0].bytes).toBe(11);
    expect(recorders[0].ends).toEqual([{ completed: true, status: 201, bytesSent: 11, bytesReceived: 6 }]);
  });

  it('a client that goes away mid-response', async () => {
    const recorders = await start();
    let upstreamClosed!: () => void;
    const closed = new Promise<void>((r) => {
      upstreamClosed = r;
    });
    upstream.handler = (_req, res) => {
      res.on('close', upstreamClosed);
      res.writeHead(200, { 'content-type': 'text/plain' });
      res.write('partial');
    };
    const { hostname, port } = new URL(t?.gateway.url as string);
    const socket = connect(Number(port), hostname);
    socket.write(`GET /api/x HTTP/1.1\r\nhost: ${hostname}\r\n\r\n`);
    await new Promise((r) => socket.once('data', r));
    socket.destroy();
    const e = await recorders[0].ended;
    await closed;
    await settle();
    expect(e).toEqual({ completed: false, status: 200, bytesSent: 7, bytesReceived: 0 });
    expect(recorders[0].ends).toHaveLength(1);
  });

  it('an upstream that fails mid-response, and one that cannot be reached', async () => {
    const recorders = await start();
    upstream.handler = (_req, res) => {
      res.writeHead(200, { 'content-type': 'text/plain' });
      res.write('partial', () => res.socket?.destroy());
    };
    await expect(
      undiciRequest(`${t?.gateway.url}/api/x`, { dispatcher: agent }).then((r) => r.body.text()),
    ).rejects.toThrow();
    const cut = await recorders[0].ended;
    expect(cut).toMatchObject({ completed: false, status: 200 });
    await t?.gateway.close();
    // An upstream nobody listens on: the gateway answers 502 itself.
    t = await startGateway(join(dir, 'unreachable.yaml'), {
      yaml: `${TIERS}upstream:\n  url: http://127.0.0.1:1\n`,
    });
    const again = observe(t);
    const r = await send(agent, `${t.gateway.url}/api/x`);
    expect(r.status).toBe(502);
    await settle();
    expect(again[0].ends).toEqual([{ completed: false, status: 502, bytesSent: 0, bytesReceived: 0 }]);
    expect(recorders[0].ends).toHaveLength(1);
  });

  it('an upstream that answers too late (504)', async () => {
    const recorders = await start('  responseTimeout: 100ms\n');
    const held: (() => void)[] = [];
    upstream.handler = (_req, res) => held.push(() => res.end());
    const r = await send(agent, `${t?.gateway.url}/api/x`);
    expect(r.status).toBe(504);
    await recorders[0].ended;
    await settle();
    for (const h of held) h();
    expect(recorders[0].ends).toEqual([{ completed: false, status: 504, bytesSent: 0, bytesReceived: 0 }]);
    expect(recorders[0].heads).toEqual([]);
  });

  it('a WebSocket: held while the connection lives, ended once when it closes', async () => {
    const recorders = await start();
    const upstreamSockets: Socket[] = [];
    const onUpgrade = (_req: unknown, socket: Socket) => {
      upstreamSockets.push(socket);
      socket.write(
        'HTTP/1.1 101 Switching Protocols\r\nupgrade: websocket\r\nconnection: upgrade\r\nx-upstream-cost: 2\r\n\r\n',
      );
      socket.on('data', (d) => socket.write(d));
      socket.on('end', () => socket.end());
    };
    upstream.server.on('upgrade', onUpgrade);
    try {
      const { hostname, port } = new URL(t?.gateway.url as string);
      const socket = connect(Number(port), hostname);
      socket.write(
        `GET /ws HTTP/1.1\r\nhost: ${hostname}\r\nconnection: upgrade\r\nupgrade: websocket\r\n` +
          'sec-websocket-version: 13\r\nsec-websocket-key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n',
      );
      let text = '';
      socket.setEncoding('utf8');
      await new Promise<void>((resolve) =>
        socket.on('data', (c: string) => {
          text += c;
          if (text.includes('\r\n\r\n')) resolve();
        }),
      );
      expect(text.split('\r\n')[0]).toBe('HTTP/1.1 101 Switching Protocols');
      expect(text).not.toContain('x-upstream-cost');
      await settle();
      // Switched and running: still held.
      expect(recorders[0].heads).toEqual([{ status: 101, cost: '2' }]);
      expect(recorders[0].ends).toEqual([]);
      socket.end();
      const e = await recorders[0].ended;
      await settle();
      expect(e).toMatchObject({ completed: true, status: 101 });
      expect(recorders[0].ends).toHaveLength(1);
    } finally {
      upstream.server.off('upgrade', onUpgrade);
      for (const s of upstreamSockets) s.destroy();
    }
  });
});
