/**
 * The adapters' once-only warnings: a request without a peer address (every such client shares `ip:unknown`),
 * and a forwarding header from a peer that is not a trusted proxy (every client behind an unlisted proxy shares
 * the proxy's bucket). Each is given once per limiter however many requests follow, through the `warn` option.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createAdaptorServer } from '@hono/node-server';
import express from 'express';
import Fastify from 'fastify';
import { Hono } from 'hono';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { OneSocket } from '../../../test/support/one-socket.js';
import { rateLimit as expressRateLimit } from '../src/express/index.js';
import { sluiceFastify } from '../src/fastify/index.js';
import { rateLimit as honoRateLimit, honoRequestInfo } from '../src/hono/index.js';
import type { HttpLimiter, WarnFunction, WarningCode } from '../src/http/index.js';
import { withRateLimit } from '../src/node/index.js';
import { ADAPTERS, type AdapterName } from './support/adapter-apps.js';
import { fixture } from './support/adapter-fixtures.js';

type Where = { readonly port: 0; readonly host: '127.0.0.1' } | { readonly path: string };
interface Running {
  readonly target: string | { readonly path: string };
  close(): Promise<void>;
}

function listenOn(server: Server, where: Where): Promise<Running> {
  return new Promise((resolve) => {
    const done = () =>
      resolve({
        target: 'path' in where ? where : `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
        close: () => {
          server.closeAllConnections();
          return new Promise<void>((r) => server.close(() => r()));
        },
      });
    if ('path' in where) server.listen(where.path, done);
    else server.listen(where.port, where.host, done);
  });
}

/** A one-route app (`GET /api/x`) on the adapter, with the given warn function. */
async function serve(
  adapter: AdapterName,
  http: HttpLimiter,
  warn: WarnFunction,
  where: Where,
): Promise<Running> {
  switch (adapter) {
    case 'node':
      return listenOn(createServer(withRateLimit(http, (_req, res) => res.end('ok'), { warn })), where);
    case 'express': {
      const app = express();
      app.use(expressRateLimit(http, { warn }));
      app.get('/api/x', (_req, res) => {
        res.end('ok');
      });
      return listenOn(createServer(app), where);
    }
    case 'fastify': {
      const app = Fastify();
      await app.register(sluiceFastify, { limiter: http, warn });
      app.get('/api/x', async () => 'ok');
      await app.listen('path' in where ? { path: where.path } : where);
      const port = 'path' in where ? 0 : (app.server.address() as AddressInfo).port;
      return {
        target: 'path' in where ? where : `http://127.0.0.1:${port}`,
        close: async () => {
          app.server.closeAllConnections();
          await app.close();
        },
      };
    }
    case 'hono': {
      const app = new Hono();
      app.use('*', honoRateLimit(http, { warn }));
      app.get('/api/x', (c) => c.text('ok'));
      return listenOn(createAdaptorServer({ fetch: app.fetch }) as Server, where);
    }
  }
}

/** A warn function that records what it was given. */
function captured(): WarnFunction & { calls: [string, WarningCode][] } {
  const calls: [string, WarningCode][] = [];
  return Object.assign((message: string, code: WarningCode) => void calls.push([message, code]), { calls });
}

const open: (Running | OneSocket)[] = [];
afterEach(async () => {
  for (const o of open.splice(0)) {
    if (o instanceof OneSocket) o.close();
    else await o.close();
  }
  vi.unstubAllGlobals();
  // A module that read `navigator` when loaded under a stub is dropped, so a later file of this process (the unit
  // project runs its files in one) loads it again off Workers.
  vi.resetModules();
});

async function hundred(target: Running['target'], headers: Record<string, string> = {}): Promise<number[]> {
  const s = await OneSocket.open(target);
  open.push(s);
  const statuses: number[] = [];
  for (let i = 0; i < 100; i++) statuses.push((await s.request('GET', '/api/x', { headers })).status);
  return statuses;
}

let socketCount = 0;
const socketPath = () => join(tmpdir(), `sluice-warn-${process.pid}-${++socketCount}.sock`);

describe.each(ADAPTERS)('%s adapter warnings', (adapter) => {
  it('warns once, with SLUICE_W_NO_PEER_ADDRESS, for 100 requests without a peer address', async () => {
    const warn = captured();
    const app = await serve(adapter, fixture().http, warn, { path: socketPath() });
    open.push(app);
    const statuses = await hundred(app.target);
    expect(statuses.slice(0, 4)).toEqual([200, 200, 200, 429]); // all of them share ip:unknown
    expect(warn.calls.map((c) => c[1])).toEqual(['SLUICE_W_NO_PEER_ADDRESS']);
    expect(warn.calls[0][0]).toMatch(/ip:unknown/);
  });

  it('warns once, with SLUICE_W_UNTRUSTED_FORWARDED, for 100 forwarded requests from an untrusted peer', async () => {
    const warn = captured();
    const app = await serve(adapter, fixture().http, warn, { port: 0, host: '127.0.0.1' });
    open.push(app);
    await hundred(app.target, { 'x-forwarded-for': '198.51.100.7' });
    expect(warn.calls.map((c) => c[1])).toEqual(['SLUICE_W_UNTRUSTED_FORWARDED']);
    expect(warn.calls[0][0]).toMatch(/127\.0\.0\.1.*X-Forwarded-For.*trustedProxies/);
  });

  it('says nothing when the peer is a trusted proxy, or when nothing is forwarded', async () => {
    const warn = captured();
    const trusted = await serve(adapter, fixture('sync', { trustedProxies: ['loopback'] }).http, warn, {
      port: 0,
      host: '127.0.0.1',
    });
    open.push(trusted);
    await hundred(trusted.target, { forwarded: 'for=198.51.100.7' });
    await hundred(trusted.target, { 'x-forwarded-for': '198.51.100.7' });
    const direct = await serve(adapter, fixture().http, warn, { port: 0, host: '127.0.0.1' });
    open.push(direct);
    await hundred(direct.target);
    expect(warn.calls).toEqual([]);
  });
});

describe('warnings are per limiter', () => {
  it('gives one warning between a global and a route-level middleware over the same limiter', async () => {
    const warn = captured();
    const { http } = fixture();
    const app = express();
    app.use(expressRateLimit(http, { warn }));
    app.get('/api/x', expressRateLimit(http, { warn, operation: 'rl.write' }), (_req, res) => {
      res.end('ok');
    });
    const running = await listenOn(createServer(app), { path: socketPath() });
    open.push(running);
    await hundred(running.target);
    expect(warn.calls.map((c) => c[1])).toEqual(['SLUICE_W_NO_PEER_ADDRESS']);
  });

  it('goes to process.emitWarning with its code by default', async () => {
    const seen = new Promise<Error & { code?: string }>((resolve) => process.once('warning', resolve));
    const running = await listenOn(createServer(withRateLimit(fixture().http, (_q, res) => res.end('ok'))), {
      path: socketPath(),
    });
    open.push(running);
    await hundred(running.target);
    const w = await seen;
    expect(w.name).toBe('SluiceWarning');
    expect(w.code).toBe('SLUICE_W_NO_PEER_ADDRESS');
  });
});

describe('Hono adapter: the peer address on each runtime', () => {
  /** The peer address the default finds for a request with `env` as the runtime passes it. */
  async function peerWith(env: unknown, headers: Record<string, string> = {}) {
    const { http } = fixture();
    let seen: string | undefined;
    const warn = captured();
    const app = new Hono();
    app.use('*', honoRateLimit(http, { warn }));
    app.get('/api/x', (c) => {
      seen = honoRequestInfo(c).remoteAddress;
      return c.text('ok');
    });
    const r = await app.request('/api/x', { headers }, env as never);
    expect(r.status).toBe(200);
    return { seen, warnings: warn.calls.map((c) => c[1]) };
  }

  it('reads Bun, Deno, AWS Lambda and Netlify connection info', async () => {
    const bunServer = {
      requestIP: (req: Request) => (req instanceof Request ? { address: '192.0.2.10' } : null),
    };
    expect(await peerWith(bunServer)).toEqual({ seen: '192.0.2.10', warnings: [] });
    expect(await peerWith({ server: bunServer })).toEqual({ seen: '192.0.2.10', warnings: [] });
    expect(await peerWith({ remoteAddr: { transport: 'tcp', hostname: '192.0.2.11', port: 4 } })).toEqual({
      seen: '192.0.2.11',
      warnings: [],
    });
    expect(await peerWith({ requestContext: { identity: { sourceIp: '192.0.2.12' } } })).toMatchObject({
      seen: '192.0.2.12',
    });
    expect(await peerWith({ requestContext: { http: { sourceIp: '192.0.2.13' } } })).toMatchObject({
      seen: '192.0.2.13',
    });
    expect(await peerWith({ context: { ip: '192.0.2.14' } })).toMatchObject({ seen: '192.0.2.14' });
  });

  it('finds none on a Deno Unix socket or without connection info, and says how to pass one', async () => {
    expect(await peerWith({ remoteAddr: { transport: 'unix', path: '/tmp/s' } })).toEqual({
      seen: undefined,
      warnings: ['SLUICE_W_NO_PEER_ADDRESS'],
    });
    // A client's CF-Connecting-IP means nothing off Cloudflare.
    expect(await peerWith(undefined, { 'cf-connecting-ip': '192.0.2.15' })).toEqual({
      seen: undefined,
      warnings: ['SLUICE_W_NO_PEER_ADDRESS'],
    });
  });

  it('reads CF-Connecting-IP on Cloudflare Workers', async () => {
    vi.stubGlobal('navigator', { userAgent: 'Cloudflare-Workers' });
    vi.resetModules();
    const { runtimeRemoteAddress } = await import('../src/hono/peer-address.js');
    const app = new Hono();
    let seen: string | undefined;
    app.get('/', (c) => {
      seen = runtimeRemoteAddress(c);
      return c.text('ok');
    });
    await app.request('/', { headers: { 'cf-connecting-ip': '192.0.2.16' } }, {});
    expect(seen).toBe('192.0.2.16');
  });
});
