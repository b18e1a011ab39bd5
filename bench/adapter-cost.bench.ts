/**
 * What an adapter costs per request in process, without sockets: CPU and bytes allocated per request of node:http
 * and Fastify handlers, driven through real `IncomingMessage` and `ServerResponse` objects on a socket that drops
 * what it is given. The socket figures of `http.bench.ts` move by more than 10% between rounds on a shared 2-core
 * machine (a same-code control did), and both servers make the same system calls per request (one read, one
 * write), so the difference between bare and Sluice is this: JavaScript and the garbage it leaves.
 *
 * Contenders run in one process, interleaved pass by pass (A B C, then C B A); each figure is the median of
 * per-pass ratios against the first contender, with the middle half. Bytes per request come from V8's sampling
 * heap profiler with objects collected by minor and major GC included, so garbage counts.
 *
 *   npx tsx bench/adapter-cost.bench.ts
 *   BENCH_BASELINE=/tmp/base npx tsx bench/adapter-cost.bench.ts   # also Sluice of another tree (its own npm ci)
 *   BENCH_MODE=allowed BENCH_PASSES=31 taskset -c 1 npx tsx bench/adapter-cost.bench.ts
 */
import { IncomingMessage, ServerResponse } from 'node:http';
import { Session } from 'node:inspector/promises';
import type { Socket } from 'node:net';
import { Duplex } from 'node:stream';
import Fastify from 'fastify';
import { median, table } from './lib/stats.js';

const MODE = process.env.BENCH_MODE === 'allowed' ? 'allowed' : 'denied';
const PASSES = Number(process.env.BENCH_PASSES ?? 21);
const PER_PASS = Number(process.env.BENCH_PER_PASS ?? 10_000);
const BASELINE = process.env.BENCH_BASELINE;
const HERE = new URL('..', import.meta.url).pathname;
const LIMIT = MODE === 'denied' ? 1 : 1_000_000_000;
const BODY = 'hello world';

type Handler = (req: IncomingMessage, res: ServerResponse) => void;

/** A socket that takes every write at once and keeps nothing: strings stay strings, as a real socket's do. */
class Sink extends Duplex {
  readonly remoteAddress = '127.0.0.1';
  constructor() {
    super({ decodeStrings: false });
  }
  override _read(): void {}
  override _write(_c: unknown, _e: string, cb: () => void): void {
    cb();
  }
  override _writev(_c: unknown, cb: () => void): void {
    cb();
  }
}

/** Sluice's HTTP limiter and adapters of one tree (this one, or BENCH_BASELINE). */
async function sluiceOf(root: string) {
  const src = `${root}/packages/sluice/src`;
  const { Limiter } = await import(`${src}/core/index.js`);
  const { MemoryStore } = await import(`${src}/memory/index.js`);
  const { createHttpLimiter } = await import(`${src}/http/index.js`);
  const { withRateLimit } = await import(`${src}/node/index.js`);
  const { sluiceFastify } = await import(`${src}/fastify/index.js`);
  const http = () =>
    createHttpLimiter({
      limiter: new Limiter({
        policies: [{ name: 'rl.api', quota: LIMIT, window: 60, burst: LIMIT }],
        store: new MemoryStore(),
      }),
      rules: [{ policies: ['rl.api'], key: 'ip' }],
      headers: 'draft-11',
    });
  return { http, withRateLimit, sluiceFastify };
}

const hello: Handler = (_req, res) => {
  res.setHeader('Content-Type', 'text/plain');
  res.end(BODY);
};

/** The request listener of a Fastify app with one route, after `ready()`. */
async function fastifyHandler(
  setup?: (app: ReturnType<typeof Fastify>) => Promise<unknown>,
): Promise<Handler> {
  const app = Fastify();
  if (setup) await setup(app);
  app.get('/', async (_req, reply) => reply.type('text/plain').send(BODY));
  await app.ready();
  return app.server.listeners('request')[0] as Handler;
}

/** One GET / of one client, answered by `h` on a fresh socket, ended as the parser would end it. */
function one(h: Handler): void {
  const socket = new Sink() as unknown as Socket;
  const req = new IncomingMessage(socket);
  req.method = 'GET';
  req.url = '/';
  req.httpVersionMajor = 1;
  req.httpVersionMinor = 1;
  req.httpVersion = '1.1';
  req.rawHeaders.push('Host', '127.0.0.1:8080');
  const res = new ServerResponse(req);
  res.shouldKeepAlive = true;
  res.assignSocket(socket);
  h(req, res);
  req.complete = true;
  req.push(null);
}

/** Runs `n` requests, yielding to the event loop every 32 (as a server's turns do, so ticks do not pile up). */
async function run(h: Handler, n: number): Promise<void> {
  for (let i = 0; i < n; i++) {
    one(h);
    if ((i & 31) === 31) await new Promise((r) => setImmediate(r));
  }
  await new Promise((r) => setImmediate(r));
}

/** Bytes allocated per request by `h`, garbage included. */
async function bytesPerRequest(h: Handler): Promise<number> {
  await run(h, 5_000);
  const s = new Session();
  s.connect();
  await s.post('HeapProfiler.startSampling', {
    samplingInterval: 256,
    includeObjectsCollectedByMajorGC: true,
    includeObjectsCollectedByMinorGC: true,
  });
  const n = 20_000;
  await run(h, n);
  const { profile } = await s.post('HeapProfiler.stopSampling');
  s.disconnect();
  let total = 0;
  const walk = (node: { selfSize: number; children: unknown[] }) => {
    total += node.selfSize;
    for (const c of node.children) walk(c as typeof node);
  };
  walk(profile.head as never);
  return total / n;
}

/** The median of per-pass ratios `a / b`, with the middle half and the range. */
function passRatios(a: number[], b: number[]): string {
  const ratios = a.map((x, k) => x / b[k]).sort((x, y) => x - y);
  const q = (f: number) => ratios[Math.round(f * (ratios.length - 1))].toFixed(3);
  return `${median(ratios).toFixed(3)} (${q(0.25)} to ${q(0.75)}; ${q(0)} to ${q(1)})`;
}

async function main(): Promise<void> {
  const mine = await sluiceOf(HERE);
  const base = BASELINE === undefined ? undefined : await sluiceOf(BASELINE);
  const groups: [string, [string, Handler][]][] = [];
  const node: [string, Handler][] = [
    ['node bare', hello],
    ['node + sluice', mine.withRateLimit(mine.http(), hello)],
  ];
  if (base) node.push(['node + sluice (baseline)', base.withRateLimit(base.http(), hello)]);
  groups.push(['node:http', node]);
  const fastify: [string, Handler][] = [
    ['fastify bare', await fastifyHandler()],
    [
      'fastify + sluice',
      await fastifyHandler((app) => app.register(mine.sluiceFastify, { limiter: mine.http() })),
    ],
  ];
  if (base) {
    fastify.push([
      'fastify + sluice (baseline)',
      await fastifyHandler((app) => app.register(base.sluiceFastify, { limiter: base.http() })),
    ]);
  }
  groups.push(['Fastify', fastify]);
  const rows: string[][] = [];
  for (const [group, list] of groups) {
    const cpu = list.map((): number[] => []);
    for (let p = 0; p < PASSES; p++) {
      const order = p % 2 === 0 ? list.map((_, i) => i) : list.map((_, i) => list.length - 1 - i);
      for (const i of order) {
        const c0 = process.cpuUsage();
        await run(list[i][1], PER_PASS);
        const c = process.cpuUsage(c0);
        // The first two passes warm up the JIT.
        if (p > 1) cpu[i].push((c.user + c.system) / PER_PASS);
      }
    }
    for (let i = 0; i < list.length; i++) {
      rows.push([
        group,
        list[i][0],
        median(cpu[i]).toFixed(2),
        i === 0 ? '1.000' : passRatios(cpu[i], cpu[0]),
        // This tree's Sluice against the baseline's, pass by pass: the figure a change to an adapter moves.
        i === 2 ? passRatios(cpu[1], cpu[2]) : '',
        (await bytesPerRequest(list[i][1])).toFixed(0),
      ]);
    }
  }
  console.log(
    `Adapter cost in process, ${MODE}: ${PASSES - 2} passes of ${PER_PASS} requests per contender, Node ${process.version}\n`,
  );
  console.log(
    table(
      [
        'group',
        'handler',
        'CPU us/req',
        'CPU vs bare, median of pass ratios',
        'this tree / baseline',
        'bytes allocated/req',
      ],
      rows,
    ),
  );
}

await main();
