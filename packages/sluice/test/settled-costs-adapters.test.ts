/**
 * Costs settled from the response through the four adapters (node:http, Express, Fastify, Hono): an OpenAI-style
 * handler streams server-sent events whose last event carries the usage, another names its cost in a header. The
 * next request's RateLimit header shows the bucket after the settlement.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Readable } from 'node:stream';
import express from 'express';
import Fastify from 'fastify';
import { Hono } from 'hono';
import { afterEach, describe, expect, it } from 'vitest';
import { Limiter, ManualClock } from '../src/core/index.js';
import { rateLimit as expressRateLimit } from '../src/express/express-adapter.js';
import { sluiceFastify } from '../src/fastify/fastify-adapter.js';
import { rateLimit as honoRateLimit } from '../src/hono/hono-adapter.js';
import { createHttpLimiter, type HttpLimiter } from '../src/http/index.js';
import { MemoryStore } from '../src/memory/index.js';
import { withRateLimit } from '../src/node/node-adapter.js';
import { listen } from './support/adapter-fixtures.js';

const closers: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  await Promise.all(closers.splice(0).map((c) => c()));
});

const EVENTS = [
  'data: {"choices":[{"delta":{"content":"Hel"}}],"usage":null}\n\n',
  'data: {"choices":[],"usage":{"prompt_tokens":12,"completion_tokens":30,"total_tokens":42}}\n\n',
  'data: [DONE]\n\n',
];

function setup() {
  const clock = new ManualClock(0);
  const limiter = new Limiter({
    policies: [
      { name: 'tokens', quota: 1000, window: 60, burst: 1000 },
      { name: 'units', quota: 100, window: 60, burst: 100 },
    ],
    store: new MemoryStore({ clock, sweepIntervalMs: 0 }),
  });
  const http = createHttpLimiter({
    limiter,
    rules: [
      { path: '/v1/chat', policies: ['tokens'], settle: { json: 'usage.total_tokens', reserve: 100 } },
      { path: '/report', policies: ['units'], settle: { header: 'x-upstream-cost' } },
    ],
    headers: 'draft-11',
  });
  return http;
}

/** A Node.js handler: the stream of events, or a report with its cost in a header. */
function nodeHandler(req: IncomingMessage, res: ServerResponse): void {
  if (req.url === '/report') {
    res.writeHead(200, { 'content-type': 'text/plain', 'x-upstream-cost': '25' });
    res.end('rows');
    return;
  }
  res.writeHead(200, { 'content-type': 'text/event-stream' });
  for (const e of EVENTS) res.write(e);
  res.end();
}

type Mount = (http: HttpLimiter) => Promise<string>;

async function serveNode(server: Server): Promise<string> {
  const s = await listen(server);
  closers.push(s.close);
  return s.url;
}

const MOUNTS: Record<string, Mount> = {
  'node:http': (l) => serveNode(createServer(withRateLimit(l, nodeHandler))),
  Express: (l) => {
    const app = express();
    app.use(expressRateLimit(l));
    app.all('/{*any}', (req, res) => nodeHandler(req, res));
    return serveNode(createServer(app));
  },
  Fastify: async (l) => {
    const app = Fastify();
    closers.push(() => app.close());
    await app.register(sluiceFastify, { limiter: l });
    // Through Fastify's own reply, which carries the rate-limit headers the plugin set.
    app.get('/report', (_req, reply) => reply.header('x-upstream-cost', '25').send('rows'));
    app.get('/v1/chat', (_req, reply) =>
      reply
        .header('content-type', 'text/event-stream')
        .send(Readable.from(EVENTS.map((e) => Buffer.from(e)))),
    );
    await app.listen({ port: 0, host: '127.0.0.1' });
    return `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`;
  },
  Hono: async (l) => {
    const { serve } = await import('@hono/node-server');
    const app = new Hono();
    app.use('*', honoRateLimit(l));
    app.get('/report', (c) => {
      c.header('x-upstream-cost', '25');
      return c.text('rows');
    });
    app.get('/v1/chat', () => {
      const enc = new TextEncoder();
      const body = new ReadableStream<Uint8Array>({
        start(c) {
          for (const e of EVENTS) c.enqueue(enc.encode(e));
          c.close();
        },
      });
      return new Response(body, { headers: { 'content-type': 'text/event-stream' } });
    });
    const server = await new Promise<Server>((resolve) => {
      const s = serve({ fetch: app.fetch, port: 0, hostname: '127.0.0.1' }, () => resolve(s as Server));
    });
    closers.push(() => new Promise((r) => server.close(r)));
    return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  },
};

/** r of a policy in the RateLimit header of a fresh request, once the earlier response has settled. */
async function rAfter(url: string, path: string, policy: string, want: number): Promise<number> {
  let got = Number.NaN;
  for (let i = 0; i < 20; i++) {
    for (let j = 0; j < 20; j++) await new Promise((res) => setImmediate(res));
    // Peek through a request that costs what it reserves; compare with what it would show after the settlement.
    const r = await fetch(`${url}${path}`);
    await r.text();
    const m = new RegExp(`"${policy}";r=(\\d+)`).exec(r.headers.get('ratelimit') ?? '');
    got = m === null ? Number.NaN : Number(m[1]);
    if (got === want) return got;
    want -= path === '/report' ? 25 : 42; // that probe settles too, before the next one
  }
  return got;
}

describe('costs settled from the response, through each adapter', () => {
  for (const [name, mount] of Object.entries(MOUNTS)) {
    it(`${name}: streamed usage and a cost header settle, and the next headers show r after them`, async () => {
      const url = await mount(setup());
      const a = await fetch(`${url}/v1/chat`);
      const text = await a.text();
      expect(text).toContain('"total_tokens":42');
      expect(a.headers.get('ratelimit')).toContain('"tokens";r=900');
      // 1000 - 42 settled, then the probe's own reservation of 100.
      expect(await rAfter(url, '/v1/chat', 'tokens', 1000 - 42 - 100)).toBe(858);
      const b = await fetch(`${url}/report`);
      expect(b.headers.get('x-upstream-cost')).toBeNull();
      await b.text();
      expect(await rAfter(url, '/report', 'units', 100 - 25 - 1)).toBe(74);
    });
  }
});
