import type { Context } from 'hono';

/**
 * Cloudflare Workers have no socket to ask: the edge puts the client address in `CF-Connecting-IP` and replaces
 * any copy a client sent, so there (and only there) the header is the peer. Decided once, at load.
 */
const ON_WORKERS =
  typeof navigator !== 'undefined' &&
  typeof navigator.userAgent === 'string' &&
  navigator.userAgent.startsWith('Cloudflare-Workers');

type Bag = { readonly [name: string]: unknown } | null | undefined;
const bag = (v: unknown): Bag => (typeof v === 'object' || typeof v === 'function' ? (v as Bag) : undefined);
const text = (v: unknown): string | undefined => (typeof v === 'string' && v !== '' ? v : undefined);

/**
 * The peer address of a Hono request on whichever runtime serves it, read from what the runtime passes to
 * `app.fetch` as `c.env`, as Hono's own `getConnInfo` helpers do, without importing any runtime's module:
 * `@hono/node-server` (`env.incoming.socket`), Bun (`server.requestIP`), Deno (`remoteAddr` of the serve
 * handler info), AWS Lambda (`requestContext` source IP), Netlify (`context.ip`), and Cloudflare Workers
 * (`CF-Connecting-IP`). Node comes first and costs what the single Node lookup cost before.
 *
 * @param c - the Hono context.
 * @returns the address, or `undefined` where the runtime tells none (then pass `remoteAddress` to the middleware).
 */
export function runtimeRemoteAddress(c: Context): string | undefined {
  if (ON_WORKERS) return text(c.req.raw.headers.get('cf-connecting-ip'));
  const env = bag(c.env);
  if (env === undefined || env === null) return undefined;
  const incoming = bag(env.incoming) ?? bag(bag(env.server)?.incoming);
  const socket = bag(incoming?.socket);
  if (socket) return text(socket.remoteAddress);
  return otherRuntime(c, env);
}

function otherRuntime(c: Context, env: NonNullable<Bag>): string | undefined {
  // Bun: `Bun.serve({ fetch: app.fetch })` passes the server (some setups wrap it as `{ server }`).
  const server = 'server' in env ? bag(env.server) : env;
  const requestIP = server?.requestIP;
  if (typeof requestIP === 'function') {
    return text(bag(requestIP.call(server, c.req.raw))?.address);
  }
  // Deno: `Deno.serve(app.fetch)` passes the handler info; a Unix socket has a path, not a hostname.
  const remoteAddr = bag(env.remoteAddr);
  if (remoteAddr) return remoteAddr.transport === 'unix' ? undefined : text(remoteAddr.hostname);
  // AWS Lambda behind API Gateway (REST: identity.sourceIp; HTTP API: http.sourceIp).
  const rc = bag(env.requestContext);
  if (rc) return text(bag(rc.identity)?.sourceIp) ?? text(bag(rc.http)?.sourceIp);
  // Netlify edge functions.
  return text(bag(env.context)?.ip);
}
