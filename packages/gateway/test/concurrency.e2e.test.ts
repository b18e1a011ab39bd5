import type { IncomingMessage, ServerResponse } from 'node:http';
import { connect, type Socket } from 'node:net';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { rawGet } from './own-connections.js';
import {
  client,
  send,
  startGateway,
  startUpstream,
  type TestGateway,
  type TestUpstream,
  tempDir,
} from './support.js';

const N = 3;
const CONFIG = `rateLimiting:
  defaultTier: free
  concurrencyRetryAfter: 2s
  tiers:
    free: { requestsPerMinute: 6000, burstLimit: 1000 }
  endpoints:
    - pattern: /api/reports/*
      name: reports
      concurrent: ${N}
headers:
  mode: draft-11
upstream:
`;

/** An upstream that holds every request until told, and counts what it holds. */
class HoldingUpstream {
  inFlight = 0;
  most = 0;
  readonly held: ServerResponse[] = [];
  #waiters: { n: number; resolve: () => void }[] = [];
  handler = (req: IncomingMessage, res: ServerResponse): void => {
    this.inFlight++;
    this.most = Math.max(this.most, this.inFlight);
    res.on('close', () => this.inFlight--);
    req.resume();
    this.held.push(res);
    for (const w of this.#waiters.splice(0)) {
      if (this.held.length >= w.n) w.resolve();
      else this.#waiters.push(w);
    }
  };
  /** Resolves once `n` requests are held. */
  holding(n: number): Promise<void> {
    if (this.held.length >= n) return Promise.resolve();
    return new Promise((resolve) => this.#waiters.push({ n, resolve }));
  }
  /** Answers every held request. */
  releaseAll(): void {
    for (const res of this.held.splice(0)) res.end('done');
  }
}

/** An upgrade to a WebSocket of the reports route on a new connection: its socket and the status answered. */
function openUpgrade(url: string): Promise<{ socket: Socket; status: number }> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve) => {
    const socket = connect(Number(port), hostname, () =>
      socket.write(
        `GET /api/reports/ws HTTP/1.1\r\nhost: ${hostname}\r\nconnection: upgrade\r\nupgrade: websocket\r\n` +
          'sec-websocket-version: 13\r\nsec-websocket-key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n',
      ),
    );
    socket.once('data', (d: Buffer) => resolve({ socket, status: Number(d.toString().slice(9, 12)) }));
  });
}

/**
 * The first upgrade that switches once a slot is free: the gateway gives the slot back when it has seen the close,
 * a turn or more after the client's, so a refused attempt is closed and tried again (up to 50 times).
 */
async function switchedOnceFree(
  open: () => Promise<{ socket: Socket; status: number }>,
): Promise<{ socket: Socket; status: number }> {
  let next = await open();
  for (let i = 0; i < 50 && next.status !== 101; i++) {
    next.socket.destroy();
    await new Promise((r) => setImmediate(r));
    next = await open();
  }
  return next;
}

describe('concurrency limits at the gateway', () => {
  const { dir, cleanup } = tempDir();
  const agent = client();
  let upstream: TestUpstream;
  let hold: HoldingUpstream;
  let t: TestGateway;

  beforeAll(async () => {
    upstream = await startUpstream();
  });
  afterEach(async () => {
    hold.releaseAll();
    await t.gateway.close();
  });
  afterAll(async () => {
    await agent.close();
    await upstream.close();
    cleanup();
  });

  async function start(timeout = '30s'): Promise<string> {
    hold = new HoldingUpstream();
    upstream.handler = hold.handler;
    t = await startGateway(join(dir, 'concurrency.yaml'), {
      yaml: `${CONFIG}  url: ${upstream.url}\n  responseTimeout: ${timeout}\n`,
    });
    return t.gateway.url;
  }

  /** N requests taken and answered: every slot is free. */
  async function expectAllSlotsFree(url: string): Promise<void> {
    const answers = Array.from({ length: N }, () => rawGet(url, '/api/reports/again'));
    await hold.holding(N);
    hold.releaseAll();
    expect(await Promise.all(answers)).toEqual(Array(N).fill(200));
  }

  it('200 concurrent clients: never more than N in flight at the upstream, the rest refused with 429', async () => {
    const url = await start();
    const answers = Array.from({ length: 200 }, () => rawGet(url, '/api/reports/q'));
    await hold.holding(N);
    // Every request but the N held is answered while they run.
    const early = await Promise.race([
      Promise.all(answers.map((a) => a.then((s) => s))).then(() => 'all'),
      new Promise<string>((resolve) => {
        let refused = 0;
        for (const a of answers)
          a.then((s) => {
            if (s === 429 && ++refused === 200 - N) resolve('refused');
          });
      }),
    ]);
    expect(early).toBe('refused');
    expect(hold.most).toBe(N);
    hold.releaseAll();
    const statuses = await Promise.all(answers);
    expect(statuses.filter((s) => s === 200)).toHaveLength(N);
    // Free again: this one goes through; while N are held, the problem answer names the policy.
    const one = send(agent, `${url}/api/reports/one`);
    await hold.holding(1);
    hold.releaseAll();
    expect((await one).status).toBe(200);
    const many = Array.from({ length: N }, () => rawGet(url, '/api/reports/h'));
    await hold.holding(N);
    // The gauges of /metrics: the requests in flight under the policy, and its slots.
    const metrics = (await send(agent, `${url}/metrics`)).text;
    expect(metrics).toContain('sluice_in_flight_requests{policy="reports"} 3');
    expect(metrics).toContain('sluice_in_flight_limit{policy="reports"} 3');
    const denied = await send(agent, `${url}/api/reports/x`);
    expect(denied.status).toBe(429);
    expect(denied.headers['retry-after']).toBe('2');
    expect(denied.headers['ratelimit-policy']).toBe(
      '"free";q=6000;w=60, "reports";q=3;qu="concurrent-requests"',
    );
    expect(denied.headers.ratelimit).toMatch(/"reports";r=0$/);
    expect(denied.json()['violated-policies']).toEqual(['reports']);
    hold.releaseAll();
    await Promise.all(many);
    await expectAllSlotsFree(url);
  });

  it('slots come back after a client abort mid-response, an upstream error and an upstream timeout', async () => {
    const url = await start('300ms');
    // A client that goes away while its request runs.
    const { hostname, port } = new URL(url);
    const aborts = Array.from({ length: N }, () => {
      const s = connect(Number(port), hostname, () =>
        s.write(`GET /api/reports/a HTTP/1.1\r\nhost: ${hostname}\r\n\r\n`),
      );
      s.on('error', () => {});
      return s;
    });
    await hold.holding(N);
    for (const s of aborts) s.destroy();
    await new Promise<void>((resolve) => {
      const check = () => (hold.inFlight === 0 ? resolve() : setImmediate(check));
      check();
    });
    hold.held.splice(0);
    await expectAllSlotsFree(url);
    // An upstream that fails mid-response.
    upstream.handler = (_req, res) => {
      res.writeHead(200);
      res.write('partial', () => res.socket?.destroy());
    };
    await Promise.all(Array.from({ length: N }, () => rawGet(url, '/api/reports/e').catch(() => 0)));
    upstream.handler = hold.handler;
    await expectAllSlotsFree(url);
    // An upstream that answers after the response timeout: 504, and the slot back.
    upstream.handler = () => {};
    const late = await Promise.all(Array.from({ length: N }, () => rawGet(url, '/api/reports/t')));
    expect(late).toEqual(Array(N).fill(504));
    upstream.handler = hold.handler;
    await expectAllSlotsFree(url);
  });

  it('a WebSocket holds its slot while the connection lives, and gives it back on close', async () => {
    const url = await start();
    const sockets: import('node:net').Socket[] = [];
    const onUpgrade = (_req: unknown, socket: import('node:net').Socket) => {
      sockets.push(socket);
      socket.write('HTTP/1.1 101 Switching Protocols\r\nupgrade: websocket\r\nconnection: upgrade\r\n\r\n');
      socket.on('end', () => socket.end());
    };
    upstream.server.on('upgrade', onUpgrade);
    try {
      const open = () => openUpgrade(url);
      const live = [];
      for (let i = 0; i < N; i++) live.push(await open());
      expect(live.map((l) => l.status)).toEqual(Array(N).fill(101));
      const refused = await open();
      expect(refused.status).toBe(429);
      refused.socket.destroy();
      const closed = live[0].socket;
      await new Promise<void>((resolve) => {
        closed.on('close', () => resolve());
        closed.end();
      });
      // The slot is back once the gateway has seen the close: the next upgrade switches.
      const next = await switchedOnceFree(open);
      expect(next.status).toBe(101);
      for (const l of [...live, next]) l.socket.destroy();
    } finally {
      upstream.server.off('upgrade', onUpgrade);
      for (const s of sockets) s.destroy();
    }
  });

  it('a WebSocket whose client leaves gives its slot back, even when the upstream keeps its side open', async () => {
    const url = await start();
    const upstreamSockets: import('node:net').Socket[] = [];
    // This upstream never ends its side when the client's ends (no `end` on `end`): the gateway closes both.
    const onUpgrade = (_req: unknown, socket: import('node:net').Socket) => {
      upstreamSockets.push(socket);
      socket.write('HTTP/1.1 101 Switching Protocols\r\nupgrade: websocket\r\nconnection: upgrade\r\n\r\n');
    };
    upstream.server.on('upgrade', onUpgrade);
    try {
      const open = () => openUpgrade(url);
      const live: { socket: Socket; status: number }[] = [];
      for (let i = 0; i < N; i++) live.push(await open());
      expect(live.map((l) => l.status)).toEqual(Array(N).fill(101));
      // The client goes away (its socket closed, as a browser tab does); the upstream hears of it and keeps its
      // own half open, as it is free to.
      const gone = upstreamSockets[0];
      await new Promise<void>((resolve) => {
        gone.once('end', () => resolve());
        live[0].socket.destroy();
      });
      const next = await switchedOnceFree(open);
      expect(next.status).toBe(101);
      for (const l of [...live, next]) l.socket.destroy();
    } finally {
      upstream.server.off('upgrade', onUpgrade);
      for (const s of upstreamSockets) s.destroy();
    }
  });
});
