/**
 * The same small application on each of the four adapters, for the adapter conformance suite. Each app has:
 *   GET  /health                 200 "ok" (exempt by default)
 *   GET  /api/items/:id          7 -> 200, 1 -> 403 (a foreign resource), anything else -> 404
 *   POST /api/items              201
 *   GET  /auth/me                a fake authenticator: "Bearer good" -> 200; "Bearer expired" -> 401 and a
 *                                failure with reason token_expired; anything else -> 401, reason invalid_token
 *   POST /hooks/:webhook_id      200
 * The principal comes from the header x-test-principal (standing in for a verified identity). Every handler
 * and the authenticator count their calls, so tests can prove that a limited request never reached them.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { serve } from '@hono/node-server';
import express from 'express';
import Fastify from 'fastify';
import { Hono } from 'hono';
import { rateLimit as expressRateLimit, expressRequestInfo } from '../../src/express/index.js';
import { fastifyRequestInfo, sluiceFastify } from '../../src/fastify/index.js';
import { rateLimit as honoRateLimit, honoRequestInfo } from '../../src/hono/index.js';
import type { HttpLimiter, HttpRequestInfo, Identity } from '../../src/http/index.js';
import { nodeRequestInfo, withRateLimit } from '../../src/node/index.js';

/** Calls that reached application code. */
export interface Counters {
  handler: number;
  auth: number;
}

/** A running app. */
export interface RunningApp {
  readonly url: string;
  readonly counters: Counters;
  /** The codes of the adapter's warnings, in order. */
  readonly warnings: string[];
  /** The node:http server the app runs on. */
  readonly server: Server;
  close(): Promise<void>;
}

/** A `warn` option that records the codes, and the list it records into. */
function recorder(): { warn: (message: string, code: string) => void; warnings: string[] } {
  const warnings: string[] = [];
  return { warn: (_message, code) => void warnings.push(code), warnings };
}

export type AdapterName = 'node' | 'express' | 'fastify' | 'hono';
export const ADAPTERS: readonly AdapterName[] = ['node', 'express', 'fastify', 'hono'];

const principalOf = (value: string | string[] | undefined | null): Identity | undefined =>
  typeof value === 'string' && value !== '' ? { principal: value } : undefined;

/** The fake authenticator: returns the status and, on failure, counts it through the limiter. */
async function authenticate(http: HttpLimiter, info: HttpRequestInfo, counters: Counters): Promise<number> {
  counters.auth++;
  const auth =
    typeof info.headers.get === 'function'
      ? info.headers.get('authorization')
      : (info.headers as Record<string, string>).authorization;
  if (auth === 'Bearer good') return 200;
  await http.recordFailedCredentials(info, auth === 'Bearer expired' ? 'token_expired' : 'invalid_token');
  return 401;
}

function itemStatus(id: string): number {
  return id === '7' ? 200 : id === '1' ? 403 : 404;
}

function listen(server: Server): Promise<string> {
  return new Promise((resolve) => {
    server.listen(0, '127.0.0.1', () =>
      resolve(`http://127.0.0.1:${(server.address() as AddressInfo).port}`),
    );
  });
}

function closeServer(server: Server): Promise<void> {
  server.closeAllConnections();
  return new Promise((resolve) => server.close(() => resolve()));
}

async function nodeApp(http: HttpLimiter): Promise<RunningApp> {
  const counters: Counters = { handler: 0, auth: 0 };
  const { warn, warnings } = recorder();
  const options = { identify: (req: IncomingMessage) => principalOf(req.headers['x-test-principal']), warn };
  const send = (res: ServerResponse, status: number, body: string) => {
    res.statusCode = status;
    res.setHeader('Content-Type', 'application/json');
    res.end(body);
  };
  const server = createServer(
    withRateLimit(
      http,
      (req, res) => {
        const path = (req.url ?? '/').split('?')[0];
        const item = /^\/api\/items\/([^/]+)$/.exec(path);
        if (req.method === 'GET' && path === '/health') return send(res, 200, '"ok"');
        if (req.method === 'GET' && item) {
          counters.handler++;
          return send(res, itemStatus(item[1]), `{"id":"${item[1]}"}`);
        }
        if (req.method === 'POST' && path === '/api/items') {
          counters.handler++;
          return send(res, 201, '{"created":true}');
        }
        if (req.method === 'GET' && path === '/auth/me') {
          void authenticate(http, nodeRequestInfo(req, options), counters).then((s) =>
            send(res, s, `{"status":${s}}`),
          );
          return;
        }
        if (req.method === 'POST' && /^\/hooks\/[^/]+$/.test(path)) {
          counters.handler++;
          return send(res, 200, '"ok"');
        }
        send(res, 404, '{"error":"not_found"}');
      },
      options,
    ),
  );
  const url = await listen(server);
  return { url, counters, warnings, server, close: () => closeServer(server) };
}

async function expressApp(http: HttpLimiter): Promise<RunningApp> {
  const counters: Counters = { handler: 0, auth: 0 };
  const { warn, warnings } = recorder();
  const options = { identify: (req: express.Request) => principalOf(req.headers['x-test-principal']), warn };
  const app = express();
  app.use(expressRateLimit(http, options));
  app.get('/health', (_req, res) => {
    res.json('ok');
  });
  app.get('/api/items/:id', (req, res) => {
    counters.handler++;
    res.status(itemStatus(req.params.id)).json({ id: req.params.id });
  });
  app.post('/api/items', (_req, res) => {
    counters.handler++;
    res.status(201).json({ created: true });
  });
  app.get('/auth/me', async (req, res) => {
    const s = await authenticate(http, expressRequestInfo(req, options), counters);
    res.status(s).json({ status: s });
  });
  app.post('/hooks/:webhook_id', (_req, res) => {
    counters.handler++;
    res.json('ok');
  });
  const server = createServer(app);
  const url = await listen(server);
  return { url, counters, warnings, server, close: () => closeServer(server) };
}

async function fastifyApp(http: HttpLimiter): Promise<RunningApp> {
  const counters: Counters = { handler: 0, auth: 0 };
  const identify = (req: { headers: Record<string, string | string[] | undefined> }) =>
    principalOf(req.headers['x-test-principal']);
  const { warn, warnings } = recorder();
  const app = Fastify();
  await app.register(sluiceFastify, { limiter: http, identify, warn });
  app.get('/health', async () => 'ok');
  app.get<{ Params: { id: string } }>('/api/items/:id', async (req, reply) => {
    counters.handler++;
    return reply.code(itemStatus(req.params.id)).send({ id: req.params.id });
  });
  app.post('/api/items', async (_req, reply) => {
    counters.handler++;
    return reply.code(201).send({ created: true });
  });
  app.get('/auth/me', async (req, reply) => {
    const s = await authenticate(http, fastifyRequestInfo(req, identify), counters);
    return reply.code(s).send({ status: s });
  });
  app.post('/hooks/:webhook_id', async () => {
    counters.handler++;
    return 'ok';
  });
  await app.listen({ port: 0, host: '127.0.0.1' });
  const { port } = app.server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    counters,
    warnings,
    server: app.server,
    close: async () => {
      app.server.closeAllConnections();
      await app.close();
    },
  };
}

async function honoApp(http: HttpLimiter): Promise<RunningApp> {
  const counters: Counters = { handler: 0, auth: 0 };
  const { warn, warnings } = recorder();
  const options = {
    identify: (c: import('hono').Context) => principalOf(c.req.header('x-test-principal')),
    warn,
  };
  const app = new Hono();
  app.use('*', honoRateLimit(http, options));
  app.get('/health', (c) => c.json('ok'));
  app.get('/api/items/:id', (c) => {
    counters.handler++;
    const id = c.req.param('id');
    return c.json({ id }, itemStatus(id) as 200);
  });
  app.post('/api/items', (c) => {
    counters.handler++;
    return c.json({ created: true }, 201);
  });
  app.get('/auth/me', async (c) => {
    const s = await authenticate(http, honoRequestInfo(c, options), counters);
    return c.json({ status: s }, s as 200);
  });
  app.post('/hooks/:webhook_id', (c) => {
    counters.handler++;
    return c.json('ok');
  });
  const server = await new Promise<Server>((resolve) => {
    const s = serve({ fetch: app.fetch, port: 0, hostname: '127.0.0.1' }, () => resolve(s as Server));
  });
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return { url, counters, warnings, server, close: () => closeServer(server) };
}

/** Starts the app on one adapter over the given limiter. */
export function startApp(adapter: AdapterName, http: HttpLimiter): Promise<RunningApp> {
  switch (adapter) {
    case 'node':
      return nodeApp(http);
    case 'express':
      return expressApp(http);
    case 'fastify':
      return fastifyApp(http);
    case 'hono':
      return honoApp(http);
  }
}
