import { createServer, type IncomingMessage, request, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { serve } from '@hono/node-server';
import express from 'express';
import Fastify from 'fastify';
import { Hono } from 'hono';
import { afterEach, describe, expect, it } from 'vitest';
import { rateLimit as expressRateLimit } from '../src/express/express-adapter.js';
import { sluiceFastify } from '../src/fastify/fastify-adapter.js';
import { rateLimit as honoRateLimit } from '../src/hono/hono-adapter.js';
import {
  type ComposedObserver,
  composeObservers,
  type HttpLimiter,
  observeFetchResponse,
  type ResponseEnd,
  type ResponseObserver,
} from '../src/http/index.js';
import { rateLimitMiddleware, withRateLimit } from '../src/node/node-adapter.js';
import { fixture, listen } from './support/adapter-fixtures.js';

const closers: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  await Promise.all(closers.splice(0).map((c) => c()));
});

/** An observer that records what it is fed, and resolves `ended` on its first end. */
class Recorder implements ResponseObserver {
  heads: { status: number; upstreamCost: string | undefined }[] = [];
  chunks: Uint8Array[] = [];
  ends: ResponseEnd[] = [];
  readonly ended: Promise<ResponseEnd>;
  #resolve!: (e: ResponseEnd) => void;
  constructor(readonly wantsBody = true) {
    this.ended = new Promise((r) => {
      this.#resolve = r;
    });
  }
  head(h: { status: number; get(n: string): string | undefined; remove(n: string): void }): void {
    this.heads.push({ status: h.status, upstreamCost: h.get('x-upstream-cost') });
    h.remove('x-upstream-cost');
  }
  body(chunk: Uint8Array): void {
    this.chunks.push(chunk);
  }
  end(e: ResponseEnd): void {
    this.ends.push(e);
    this.#resolve(e);
  }
  text(): string {
    return Buffer.concat(this.chunks).toString();
  }
}

/** The fixture's limiter, whose allowed verdicts carry a fresh recorder (as a concurrency rule's would). */
function observed(store: 'sync' | 'async' = 'sync') {
  const { http } = fixture(store);
  const recorders: Recorder[] = [];
  const limiter = {
    ...http,
    evaluate(info: Parameters<HttpLimiter['evaluate']>[0]) {
      const add = (v: Awaited<ReturnType<HttpLimiter['evaluate']>>) => {
        if (v.action !== 'allow') return v;
        const r = new Recorder();
        recorders.push(r);
        return { ...v, observer: r };
      };
      const v = http.evaluate(info);
      return v instanceof Promise ? v.then(add) : add(v as Awaited<typeof v>);
    },
  } as HttpLimiter;
  return { limiter, recorders };
}

/** Resolves after the event loop has turned a few times: whatever a second `end` would follow has happened. */
async function settle(): Promise<void> {
  for (let i = 0; i < 5; i++) await new Promise((r) => setImmediate(r));
}

/** A handler that answers 201 with an upstream cost header and a two-chunk body. */
function complete(_req: IncomingMessage, res: ServerResponse): void {
  res.setHeader('x-upstream-cost', '7');
  res.writeHead(201, { 'content-type': 'text/plain' });
  res.write('hello ');
  res.end('world');
}

/** A handler that sends its head and a first chunk, then never ends (the client goes away). */
function hang(_req: IncomingMessage, res: ServerResponse): void {
  res.writeHead(200, { 'content-type': 'text/plain' });
  res.write('partial');
}

/** POSTs a body, reads the answer whole. */
async function post(url: string, body = 'abcdef'): Promise<{ status: number; cost: unknown; text: string }> {
  const r = await fetch(`${url}/api/x`, { method: 'POST', body });
  return { status: r.status, cost: r.headers.get('x-upstream-cost'), text: await r.text() };
}

/** Asks for a response, and destroys the connection when its first body chunk arrives. */
function abortMidResponse(url: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const req = request(`${url}/api/x`, (res) => {
      res.once('data', () => {
        req.destroy();
        resolve();
      });
    });
    req.on('error', (e) => ((e as { code?: string }).code === 'ECONNRESET' ? resolve() : reject(e)));
    req.end();
  });
}

async function serveNode(server: Server): Promise<string> {
  const s = await listen(server);
  closers.push(s.close);
  return s.url;
}

type Mount = (limiter: HttpLimiter, handler: typeof complete) => Promise<string>;

const MOUNTS: Record<string, Mount> = {
  'node:http withRateLimit': (l, h) => serveNode(createServer(withRateLimit(l, h))),
  'node:http middleware': (l, h) => {
    const mw = rateLimitMiddleware(l);
    return serveNode(createServer((req, res) => mw(req, res, () => h(req, res))));
  },
  Express: (l, h) => {
    const app = express();
    app.use(expressRateLimit(l));
    app.all('/api/x', (req, res) => h(req, res));
    return serveNode(createServer(app));
  },
  Fastify: async (l, h) => {
    const app = Fastify();
    closers.push(() => app.close());
    await app.register(sluiceFastify, { limiter: l });
    app.all('/api/x', (req, reply) => {
      reply.hijack();
      h(req.raw, reply.raw);
    });
    await app.listen({ port: 0, host: '127.0.0.1' });
    return `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`;
  },
};

describe('response observer feeders of the Node.js adapters', () => {
  for (const [name, mount] of Object.entries(MOUNTS)) {
    describe(name, () => {
      it('gives the head before it goes out, the body chunks, and one end of a completed response', async () => {
        const { limiter, recorders } = observed();
        const url = await mount(limiter, complete);
        const r = await post(url);
        await recorders[0].ended;
        await settle();
        expect(r).toEqual({ status: 201, cost: null, text: 'hello world' });
        const rec = recorders[0];
        expect(rec.heads).toEqual([{ status: 201, upstreamCost: '7' }]);
        expect(rec.text()).toBe('hello world');
        expect(rec.ends).toEqual([{ completed: true, status: 201, bytesSent: 11, bytesReceived: 6 }]);
      });

      it('ends once, not completed, when the client goes away mid-response', async () => {
        const { limiter, recorders } = observed('async');
        const url = await mount(limiter, hang);
        await abortMidResponse(url);
        const e = await recorders[0].ended;
        await settle();
        expect(e).toEqual({ completed: false, status: 200, bytesSent: 7, bytesReceived: 0 });
        expect(recorders[0].ends).toHaveLength(1);
      });
    });
  }

  it('Fastify: a reply sent through Fastify itself (reply.send) is observed too', async () => {
    const { limiter, recorders } = observed();
    const app = Fastify();
    closers.push(() => app.close());
    await app.register(sluiceFastify, { limiter });
    app.get('/api/x', async (_req, reply) => reply.code(202).header('x-upstream-cost', '3').send('ok'));
    await app.listen({ port: 0, host: '127.0.0.1' });
    const r = await fetch(`http://127.0.0.1:${(app.server.address() as AddressInfo).port}/api/x`);
    expect(r.status).toBe(202);
    expect(r.headers.get('x-upstream-cost')).toBeNull();
    await recorders[0].ended;
    expect(recorders[0].heads).toEqual([{ status: 202, upstreamCost: '3' }]);
    expect(recorders[0].ends).toEqual([{ completed: true, status: 202, bytesSent: 2, bytesReceived: 0 }]);
  });

  it('no observer: nothing is wrapped', async () => {
    const { http } = fixture();
    let wrapped: boolean | undefined;
    const url = await serveNode(
      createServer(
        withRateLimit(http, (_req, res) => {
          wrapped = Object.hasOwn(res, 'writeHead') || Object.hasOwn(res, 'end');
          res.end('ok');
        }),
      ),
    );
    expect((await fetch(`${url}/api/x`)).status).toBe(200);
    expect(wrapped).toBe(false);
  });
});

describe('the Hono feeder', () => {
  it('observes a completed response through app.request', async () => {
    const { limiter, recorders } = observed();
    const app = new Hono();
    app.use('*', honoRateLimit(limiter, { remoteAddress: () => '192.0.2.1' }));
    app.post('/api/x', (c) => {
      c.header('x-upstream-cost', '5');
      return c.text('hello world', 201);
    });
    const r = await app.request('/api/x', {
      method: 'POST',
      body: 'abc',
      headers: { 'content-length': '3' },
    });
    expect(r.status).toBe(201);
    expect(r.headers.get('x-upstream-cost')).toBeNull();
    expect(r.headers.get('ratelimit')).toBe('"rl.read";r=2;t=1');
    expect(await r.text()).toBe('hello world');
    await recorders[0].ended;
    expect(recorders[0].heads).toEqual([{ status: 201, upstreamCost: '5' }]);
    expect(recorders[0].ends).toEqual([{ completed: true, status: 201, bytesSent: 11, bytesReceived: 3 }]);
  });

  it('ends once, not completed, when the client goes away on @hono/node-server', async () => {
    const { limiter, recorders } = observed();
    const app = new Hono();
    app.use('*', honoRateLimit(limiter));
    app.get('/api/x', () => {
      // A body that sends one chunk and then waits for ever.
      const body = new ReadableStream<Uint8Array>({
        start(c) {
          c.enqueue(new TextEncoder().encode('partial'));
        },
      });
      return new Response(body, { status: 200 });
    });
    const server = await new Promise<Server>((resolve) => {
      const s = serve({ fetch: app.fetch, port: 0, hostname: '127.0.0.1' }, () => resolve(s as Server));
    });
    closers.push(() => {
      server.closeAllConnections();
      return new Promise((r) => server.close(r));
    });
    await abortMidResponse(`http://127.0.0.1:${(server.address() as AddressInfo).port}`);
    const e = await recorders[0].ended;
    await settle();
    expect(e).toEqual({ completed: false, status: 200, bytesSent: 7, bytesReceived: 0 });
    expect(recorders[0].ends).toHaveLength(1);
  });

  it('ends once when the handler throws, and when the body source fails', async () => {
    const { limiter, recorders } = observed();
    const app = new Hono();
    app.use('*', honoRateLimit(limiter, { remoteAddress: () => '192.0.2.1' }));
    app.get('/api/boom', () => {
      throw new Error('boom');
    });
    app.get('/api/broken', () => {
      const body = new ReadableStream<Uint8Array>({
        pull(c) {
          c.error(new Error('upstream reset'));
        },
      });
      return new Response(body);
    });
    const boom = await app.request('/api/boom');
    expect(boom.status).toBe(500);
    await boom.text();
    expect((await recorders[0].ended).status).toBe(500);
    const broken = await app.request('/api/broken');
    await expect(broken.text()).rejects.toThrow();
    expect(await recorders[1].ended).toEqual({
      completed: false,
      status: 200,
      bytesSent: 0,
      bytesReceived: 0,
    });
    await settle();
    expect(recorders.map((r) => r.ends.length)).toEqual([1, 1]);
  });

  it('a bodiless response ends at once; a cancelled body ends not completed', async () => {
    const empty = new Recorder();
    observeFetchResponse(new Response(null, { status: 204 }), empty);
    expect(empty.ends).toEqual([{ completed: true, status: 204, bytesSent: 0, bytesReceived: 0 }]);
    const cut = new Recorder(false);
    const r = observeFetchResponse(new Response('abc'), cut, 9);
    await r.body?.cancel();
    expect(cut.ends).toEqual([{ completed: false, status: 200, bytesSent: 0, bytesReceived: 9 }]);
    expect(cut.chunks).toEqual([]);
  });
});

describe('composeObservers', () => {
  it('passes one observer on as it is and feeds every part of two, each end even when one throws', () => {
    const a = new Recorder(false);
    const b = new Recorder(true);
    expect(composeObservers(a, undefined)).toBe(a);
    expect(composeObservers(undefined, b)).toBe(b);
    expect(composeObservers(undefined, undefined)).toBeUndefined();
    const both = composeObservers(a, b) as ComposedObserver;
    expect(both.wantsBody).toBe(true);
    both.body(new Uint8Array([104]));
    expect(a.chunks).toEqual([]);
    expect(b.text()).toBe('h');
    const failing: ResponseObserver = {
      end() {
        throw new Error('cost observer failed');
      },
    };
    const c = new Recorder();
    const e = { completed: true, status: 200, bytesSent: 1, bytesReceived: 0 };
    expect(() => composeObservers(failing, c)?.end(e)).toThrow('cost observer failed');
    expect(c.ends).toEqual([e]);
  });
});
