/**
 * One hello-world server of the HTTP benchmark, in its own process: `<framework> <variant> <mode>`, for example
 * `fastify sluice denied`. Prints `{"port":N}` once listening on 127.0.0.1 and serves until killed; a line `cpu`
 * on stdin is answered with `{"cpu":<microseconds of CPU used so far>}`.
 *   framework: node | express | fastify
 *   variant:   bare | sluice | peer (express-rate-limit on Express, @fastify/rate-limit on Fastify) | noop (an
 *              empty middleware or onRequest hook: what being a middleware costs by itself) | floor (node only:
 *              the bytes of Sluice's answer in that mode, precomputed once and written with one writeHead: what
 *              node:http charges to send them, the ceiling of any limiter that sends the same answer; on Fastify,
 *              an onRequest hook that sets those headers and, denied, sends that body through the reply)
 *   mode:      allowed (limits never bind) | denied (one request per minute per client: nearly all get 429)
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import fastifyRateLimit from '@fastify/rate-limit';
import express from 'express';
import { rateLimit as expressRateLimit } from 'express-rate-limit';
import Fastify, { type FastifyReply } from 'fastify';
import { Limiter } from '../../packages/sluice/src/core/index.js';
import { rateLimit as sluiceExpress } from '../../packages/sluice/src/express/index.js';
import { sluiceFastify } from '../../packages/sluice/src/fastify/index.js';
import { createHttpLimiter, isPromiseLike } from '../../packages/sluice/src/http/index.js';
import { MemoryStore } from '../../packages/sluice/src/memory/index.js';
import { withRateLimit } from '../../packages/sluice/src/node/index.js';

const [framework, variant, mode] = process.argv.slice(2);
const denied = mode === 'denied';
const LIMIT = denied ? 1 : 1_000_000_000;
const BODY = 'hello world';

function sluice() {
  const limiter = new Limiter({
    policies: [{ name: 'rl.api', quota: LIMIT, window: 60, burst: LIMIT }],
    store: new MemoryStore(),
  });
  // BENCH_SLUICE_HEADERS (draft-11, legacy, both, none) separates the cost of the headers from the decision.
  const headers = (process.env.BENCH_SLUICE_HEADERS ?? 'draft-11') as 'draft-11';
  return createHttpLimiter({ limiter, rules: [{ policies: ['rl.api'], key: 'ip' }], headers });
}

/**
 * A handler that writes what Sluice answers in this mode (status, header lines and body of the second request of
 * one client) from a list made once: the same bytes on the wire, none of the work of deciding them.
 */
function floor(): (req: IncomingMessage, res: ServerResponse) => void {
  const http = sluice();
  const req = { method: 'GET', path: '/', headers: { host: '127.0.0.1' }, remoteAddress: '127.0.0.1' };
  http.evaluate(req);
  const v = http.evaluate(req);
  if (isPromiseLike(v)) throw new Error('the memory store decides synchronously');
  const body = v.body ?? BODY;
  const flat: string[] = v.headers.flat();
  if (v.action !== 'deny') flat.push('Content-Type', 'text/plain');
  flat.push('Content-Length', String(Buffer.byteLength(body)));
  return (_req, res) => {
    res.writeHead(v.status, flat);
    res.end(body);
  };
}

/**
 * The Fastify form of {@link floor}: an onRequest hook that sets the headers of Sluice's answer in this mode
 * (lower-cased once, as Fastify stores them) and, denied, sends its body through the reply as `sluice/fastify`
 * does; allowed, the route answers. What Fastify charges for the same answer, without deciding it.
 */
function fastifyFloor(): (request: unknown, reply: FastifyReply, done: () => void) => void {
  const http = sluice();
  const req = { method: 'GET', path: '/', headers: { host: '127.0.0.1' }, remoteAddress: '127.0.0.1' };
  http.evaluate(req);
  const v = http.evaluate(req);
  if (isPromiseLike(v)) throw new Error('the memory store decides synchronously');
  const headers: Record<string, string> = {};
  for (const [name, value] of v.headers) headers[name.toLowerCase()] = value;
  const body = v.body ?? '';
  const asIs = (payload: unknown): string => payload as string;
  return (_request, reply, done) => {
    reply.headers(headers);
    if (v.action !== 'deny') done();
    else reply.code(v.status).serializer(asIs).send(body);
  };
}

function ready(port: number): void {
  console.log(JSON.stringify({ port }));
}

// The parent asks for this process's CPU time around each measurement: on a 2-core machine the load generator
// is often the bottleneck, and server CPU per request is then the figure that shows a limiter's own cost.
process.stdin.setEncoding('utf8');
// A clean exit on SIGTERM, so that `node --cpu-prof` writes its profile when the parent stops the server.
process.once('SIGTERM', () => process.exit(0));
process.stdin.on('data', (chunk: string) => {
  for (const line of chunk.split('\n')) {
    if (line.trim() === 'cpu') {
      const u = process.cpuUsage();
      console.log(JSON.stringify({ cpu: u.user + u.system }));
    }
  }
});

async function main(): Promise<void> {
  if (framework === 'node') {
    const hello = (_req: IncomingMessage, res: ServerResponse) => {
      res.setHeader('Content-Type', 'text/plain');
      res.end(BODY);
    };
    const server = createServer(
      variant === 'sluice' ? withRateLimit(sluice(), hello) : variant === 'floor' ? floor() : hello,
    );
    server.listen(0, '127.0.0.1', () => ready((server.address() as AddressInfo).port));
    return;
  }
  if (framework === 'express') {
    const app = express();
    app.disable('etag');
    if (variant === 'sluice') app.use(sluiceExpress(sluice()));
    if (variant === 'noop') app.use((_req, _res, next) => next());
    if (variant === 'peer') {
      app.use(
        expressRateLimit({
          windowMs: 60_000,
          limit: LIMIT,
          standardHeaders: 'draft-8',
          legacyHeaders: false,
        }),
      );
    }
    app.get('/', (_req, res) => {
      res.type('text/plain').send(BODY);
    });
    const server = createServer(app);
    server.listen(0, '127.0.0.1', () => ready((server.address() as AddressInfo).port));
    return;
  }
  const app = Fastify();
  if (variant === 'sluice') await app.register(sluiceFastify, { limiter: sluice() });
  if (variant === 'noop') app.addHook('onRequest', (_req, _reply, done) => done());
  if (variant === 'floor') app.addHook('onRequest', fastifyFloor());
  if (variant === 'peer') await app.register(fastifyRateLimit, { max: LIMIT, timeWindow: 60_000 });
  app.get('/', async (_req, reply) => reply.type('text/plain').send(BODY));
  await app.listen({ port: 0, host: '127.0.0.1' });
  ready((app.server.address() as AddressInfo).port);
}

await main();
