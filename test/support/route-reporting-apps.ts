/**
 * The same four routes on real servers (Express 5, Fastify 5, Hono on @hono/node-server, a node:http handler
 * that routes on the WHATWG URL parser, a servlet-style router as Tomcat, Jetty and Spring route, and Debian's
 * NGINX), each answering with the name of the route that
 * served the request in `x-route` (and the target it received in `x-seen-target`), so a bypass test can tell which of the server's own routes a request target
 * reached, whatever the server made of it. Routes:
 *   POST /system/airgap/seal               seal        (NGINX: any method, exact location)
 *   *    /api/risk/simulation/studio/run   studio      (NGINX: prefix location /api/risk/simulation/studio/;
 *                                                       servlet: path mapping /api/risk/simulation/studio/*)
 *   *    /.well-known/x                    well-known
 *   anything else                          fallback
 * The Node servers can mount a Sluice limiter through their adapter (`limiter`), before the routes.
 *
 * @example
 * ```ts
 * const app = await startRouteApp('express');
 * // a request to app.url answers with x-route: seal, studio, well-known or fallback
 * await app.close();
 * ```
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { serve } from '@hono/node-server';
import express from 'express';
import Fastify from 'fastify';
import { Hono } from 'hono';
import { rateLimit as expressRateLimit } from 'sluice/express';
import { sluiceFastify } from 'sluice/fastify';
import { rateLimit as honoRateLimit } from 'sluice/hono';
import type { HttpLimiter } from 'sluice/http';
import { withRateLimit } from 'sluice/node';
import { findTool } from '../../scripts/system-tools.mjs';
import { processConfig, startNginx, tempPaths } from './nginx.js';
import { freePort } from './redis-server.js';

/** The servers {@link startRouteApp} runs. */
export type RouteAppKind = 'express' | 'fastify' | 'hono' | 'node' | 'servlet' | 'nginx';

/** The route names a server reports in `x-route`. */
export type RouteName = 'seal' | 'studio' | 'well-known' | 'fallback';

/** The routes' paths as registered. */
export const ROUTE_PATHS = Object.freeze({
  seal: '/system/airgap/seal',
  studio: '/api/risk/simulation/studio/run',
  wellKnown: '/.well-known/x',
});

/** A running server. */
export interface RouteApp {
  readonly kind: RouteAppKind;
  /** `http://127.0.0.1:<port>` */
  readonly url: string;
  close(): Promise<void>;
}

/** The message of a run without NGINX: the suite fails with it, never skips. */
export const INSTALL_NGINX = 'install nginx: apt-get install nginx';

/** The response header naming the route that served the request. */
export const ROUTE_HEADER = 'x-route';
/** The response header echoing the request target exactly as the server received it. */
export const SEEN_HEADER = 'x-seen-target';
const HEADER = ROUTE_HEADER;
const SEEN = SEEN_HEADER;

function listen(server: Server): Promise<string> {
  return new Promise((resolve) => {
    server.listen(0, '127.0.0.1', () =>
      resolve(`http://127.0.0.1:${(server.address() as AddressInfo).port}`),
    );
  });
}

function closer(server: Server): () => Promise<void> {
  return () => {
    server.closeAllConnections();
    return new Promise((resolve) => server.close(() => resolve()));
  };
}

async function expressApp(limiter: HttpLimiter | undefined): Promise<RouteApp> {
  const app = express();
  if (limiter !== undefined) app.use(expressRateLimit(limiter));
  const route = (name: RouteName) => (req: express.Request, res: express.Response) => {
    res.set(HEADER, name).set(SEEN, req.originalUrl).status(200).send(name);
  };
  app.post(ROUTE_PATHS.seal, route('seal'));
  app.all(ROUTE_PATHS.studio, route('studio'));
  app.all(ROUTE_PATHS.wellKnown, route('well-known'));
  app.use(route('fallback'));
  const server = createServer(app);
  return { kind: 'express', url: await listen(server), close: closer(server) };
}

async function fastifyApp(limiter: HttpLimiter | undefined): Promise<RouteApp> {
  const app = Fastify();
  if (limiter !== undefined) await app.register(sluiceFastify, { limiter });
  const route =
    (name: RouteName) =>
    async (req: import('fastify').FastifyRequest, reply: import('fastify').FastifyReply) =>
      reply.header(HEADER, name).header(SEEN, req.raw.url).code(200).send(name);
  app.post(ROUTE_PATHS.seal, route('seal'));
  app.all(ROUTE_PATHS.studio, route('studio'));
  app.all(ROUTE_PATHS.wellKnown, route('well-known'));
  app.setNotFoundHandler(route('fallback'));
  await app.listen({ port: 0, host: '127.0.0.1' });
  const { port } = app.server.address() as AddressInfo;
  return {
    kind: 'fastify',
    url: `http://127.0.0.1:${port}`,
    close: async () => {
      app.server.closeAllConnections();
      await app.close();
    },
  };
}

async function honoApp(limiter: HttpLimiter | undefined): Promise<RouteApp> {
  const app = new Hono();
  if (limiter !== undefined) app.use('*', honoRateLimit(limiter));
  const route = (name: RouteName) => (c: import('hono').Context) => {
    c.header(HEADER, name);
    c.header(SEEN, (c.env as { incoming?: IncomingMessage }).incoming?.url ?? '');
    return c.text(name, 200);
  };
  app.post(ROUTE_PATHS.seal, route('seal'));
  app.all(ROUTE_PATHS.studio, route('studio'));
  app.all(ROUTE_PATHS.wellKnown, route('well-known'));
  app.notFound(route('fallback'));
  const server = await new Promise<Server>((resolve) => {
    const s = serve({ fetch: app.fetch, port: 0, hostname: '127.0.0.1' }, () => resolve(s as Server));
  });
  return {
    kind: 'hono',
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: closer(server),
  };
}

/**
 * A node:http server whose handler routes on `route(method, target)`: a route name, or `undefined` for a 400 (as
 * a server that refuses the target answers). The limiter, when given, is mounted with `sluice/node`.
 */
async function routingApp(
  kind: RouteAppKind,
  limiter: HttpLimiter | undefined,
  route: (method: string | undefined, target: string) => RouteName | undefined,
): Promise<RouteApp> {
  const handler = (req: IncomingMessage, res: ServerResponse) => {
    const name = route(req.method, req.url ?? '/');
    res.writeHead(name === undefined ? 400 : 200, {
      ...(name === undefined ? {} : { [HEADER]: name }),
      [SEEN]: req.url ?? '',
      'content-type': 'text/plain',
    });
    res.end(name ?? 'bad request');
  };
  const server = createServer(limiter === undefined ? handler : withRateLimit(limiter, handler));
  return { kind, url: await listen(server), close: closer(server) };
}

/** A hand-written node:http router of the common kind: `new URL(req.url, base).pathname`, compared exactly. */
function nodeApp(limiter: HttpLimiter | undefined): Promise<RouteApp> {
  return routingApp('node', limiter, (method, target) => {
    let path: string;
    try {
      path = new URL(target, 'http://app.invalid').pathname;
    } catch {
      path = '';
    }
    if (method === 'POST' && path === ROUTE_PATHS.seal) return 'seal';
    if (path === ROUTE_PATHS.studio) return 'studio';
    return path === ROUTE_PATHS.wellKnown ? 'well-known' : 'fallback';
  });
}

/**
 * The path a servlet container maps, from the raw request target, as Tomcat does (Jetty and Spring agree on
 * these steps): the query cut off; `;parameters` removed from every segment before decoding; an encoded `/` or
 * `\` refused (Tomcat's default, 400); percent-escapes decoded; repeated slashes collapsed; `.` and `..`
 * resolved, a `..` above the root refused. `undefined` is a 400.
 */
export function servletPath(target: string): string | undefined {
  const q = target.indexOf('?');
  const raw = (q < 0 ? target : target.slice(0, q))
    .split('/')
    .map((s) => {
      const semi = s.indexOf(';');
      return semi < 0 ? s : s.slice(0, semi);
    })
    .join('/');
  if (!raw.startsWith('/') || /%2f|%5c/i.test(raw)) return undefined;
  let decoded: string;
  try {
    decoded = decodeURIComponent(raw);
  } catch {
    return undefined;
  }
  const out: string[] = [];
  const parts = decoded.split('/');
  for (let i = 1; i < parts.length; i++) {
    const s = parts[i];
    const last = i === parts.length - 1;
    if (s === '..') {
      if (out.length === 0) return undefined;
      out.pop();
      if (last) out.push('');
    } else if (s === '.' || (s === '' && !last)) {
      if (last) out.push('');
    } else out.push(s);
  }
  return `/${out.join('/')}`;
}

/**
 * A servlet-style router on node:http: the servlet mapping rules over {@link servletPath}. An exact mapping for
 * the seal (and its trailing-slash form, as Spring MVC matched it), a path mapping `/api/risk/simulation/studio/*`
 * (which serves the prefix itself, with or without its slash, and everything below it), case-sensitive.
 */
function servletApp(limiter: HttpLimiter | undefined): Promise<RouteApp> {
  const studio = '/api/risk/simulation/studio';
  return routingApp('servlet', limiter, (method, target) => {
    const path = servletPath(target);
    if (path === undefined) return undefined;
    if (method === 'POST' && (path === ROUTE_PATHS.seal || path === `${ROUTE_PATHS.seal}/`)) return 'seal';
    if (path === studio || path.startsWith(`${studio}/`)) return 'studio';
    return path === ROUTE_PATHS.wellKnown ? 'well-known' : 'fallback';
  });
}

/** The NGINX configuration: exact locations, a prefix location and the catch-all, each naming itself. */
export function routeReportingNginxConfig(prefix: string, port: number): string {
  const answer = (name: RouteName) =>
    `add_header ${HEADER} ${name} always; add_header ${SEEN} $request_uri always; return 200 "${name}\\n";`;
  return `${processConfig(prefix)}
http {
${tempPaths(prefix)}  access_log off;
  default_type text/plain;
  server {
    listen 127.0.0.1:${port};
    location = ${ROUTE_PATHS.seal} { ${answer('seal')} }
    location /api/risk/simulation/studio/ { ${answer('studio')} }
    location = ${ROUTE_PATHS.wellKnown} { ${answer('well-known')} }
    location / { ${answer('fallback')} }
  }
}
`;
}

async function nginxApp(): Promise<RouteApp> {
  if (findTool('nginx') === undefined) throw new Error(INSTALL_NGINX);
  const port = await freePort();
  const nginx = await startNginx((prefix) => routeReportingNginxConfig(prefix, port), port);
  return { kind: 'nginx', url: `http://127.0.0.1:${port}`, close: () => nginx.stop() };
}

/**
 * Starts one server with the four routes.
 *
 * @param kind - the server.
 * @param limiter - a Sluice limiter to mount through the server's adapter before the routes (Node servers only).
 * @throws Error {@link INSTALL_NGINX} when NGINX is asked for and missing.
 */
export function startRouteApp(kind: RouteAppKind, limiter?: HttpLimiter): Promise<RouteApp> {
  switch (kind) {
    case 'express':
      return expressApp(limiter);
    case 'fastify':
      return fastifyApp(limiter);
    case 'hono':
      return honoApp(limiter);
    case 'node':
      return nodeApp(limiter);
    case 'servlet':
      return servletApp(limiter);
    case 'nginx':
      if (limiter !== undefined) throw new Error('NGINX has no Sluice adapter; run it behind the gateway');
      return nginxApp();
  }
}
