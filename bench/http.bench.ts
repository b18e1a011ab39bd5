/**
 * Requests per second of a hello-world server bare, with Sluice, and with the framework's usual limiter
 * (express-rate-limit on Express, @fastify/rate-limit on Fastify), for node:http, Express and Fastify; once with
 * limits that never bind and once with nearly every request denied (429). Each server runs in its own process,
 * autocannon runs here as a library against 127.0.0.1. Rounds are interleaved (A B C A B C ...) per group, and
 * medians and ratios to the bare server are reported. Besides requests per second (bounded by the load generator
 * on a 2-core machine, where it shares the CPU with the server), each server reports its own CPU time, and the
 * CPU microseconds per request show what the limiter itself costs.
 *
 *   npx tsx bench/http.bench.ts
 *   BENCH_SECONDS=3 BENCH_ROUNDS=5 BENCH_ONLY=node npx tsx bench/http.bench.ts
 *   BENCH_PIPELINING=1 npx tsx bench/http.bench.ts       # one request in flight per connection
 *   BENCH_SLUICE_HEADERS=none npx tsx bench/http.bench.ts  # Sluice without rate-limit headers
 *   BENCH_NOOP=1 npx tsx bench/http.bench.ts               # also an empty middleware / onRequest hook
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import autocannon from 'autocannon';
import { median, rate, ratio, table } from './lib/stats.js';

const SECONDS = Number(process.env.BENCH_SECONDS ?? 1.5);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 4);
/** Only the groups whose name contains this text, for example `node` or `denied`. */
const ONLY = process.env.BENCH_ONLY ?? '';
const CONNECTIONS = 50;
/**
 * Requests in flight per connection. 10 by default: with one, the load generator (sharing 2 cores with the
 * server) is the bottleneck and the server idles, so ratios mostly show noise; set 1 for the browser-like case.
 */
const PIPELINING = Number(process.env.BENCH_PIPELINING ?? 10);
const SERVER = fileURLToPath(new URL('./http/server.ts', import.meta.url));
const children: ChildProcess[] = [];

interface Server {
  readonly url: string;
  /** CPU microseconds the server process has used so far. */
  cpu(): Promise<number>;
}

interface Contender {
  readonly label: string;
  readonly args: [framework: string, variant: string, mode: string];
  server?: Server;
  readonly rates: number[];
  /** Server CPU microseconds per request, per round. */
  readonly cpu: number[];
  non2xx: number;
  total: number;
}

function start(args: readonly string[]): Promise<Server> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--import', 'tsx', SERVER, ...args], {
      stdio: ['pipe', 'pipe', 'inherit'],
    });
    children.push(child);
    let out = '';
    const waiting: ((us: number) => void)[] = [];
    child.stdout?.on('data', (d: Buffer) => {
      out += d.toString();
      let nl = out.indexOf('\n');
      while (nl >= 0) {
        const line = out.slice(0, nl);
        out = out.slice(nl + 1);
        nl = out.indexOf('\n');
        const port = /^\{"port":(\d+)\}$/.exec(line);
        if (port) {
          resolve({
            url: `http://127.0.0.1:${port[1]}/`,
            cpu: () =>
              new Promise((r) => {
                waiting.push(r);
                child.stdin?.write('cpu\n');
              }),
          });
        }
        const cpu = /^\{"cpu":(\d+)\}$/.exec(line);
        if (cpu) waiting.shift()?.(Number(cpu[1]));
      }
    });
    child.once('exit', (code) => reject(new Error(`server ${args.join(' ')} exited ${code}`)));
  });
}

async function load(url: string, seconds: number): Promise<{ rps: number; non2xx: number; total: number }> {
  const r = await autocannon({ url, connections: CONNECTIONS, duration: seconds, pipelining: PIPELINING });
  return { rps: r.requests.total / r.duration, non2xx: r.non2xx, total: r.requests.total };
}

function group(framework: string, mode: string, peer: string | undefined): Contender[] {
  const make = (label: string, variant: string): Contender => ({
    label,
    args: [framework, variant, mode],
    rates: [],
    cpu: [],
    non2xx: 0,
    total: 0,
  });
  const list = [make(`${framework} bare`, 'bare'), make(`${framework} + sluice`, 'sluice')];
  if (peer) list.push(make(`${framework} + ${peer}`, 'peer'));
  // BENCH_NOOP=1 adds an empty middleware (or hook): the floor any limiter in that framework starts from.
  if (process.env.BENCH_NOOP === '1' && framework !== 'node')
    list.push(make(`${framework} + empty middleware`, 'noop'));
  return list;
}

async function main(): Promise<void> {
  const groups: [string, Contender[]][] = [];
  for (const mode of ['allowed', 'denied']) {
    groups.push([`node:http, ${mode}`, group('node', mode, undefined)]);
    groups.push([`Express, ${mode}`, group('express', mode, 'express-rate-limit')]);
    groups.push([`Fastify, ${mode}`, group('fastify', mode, '@fastify/rate-limit')]);
  }
  const chosen = groups.filter(([name]) => name.toLowerCase().includes(ONLY.toLowerCase()));
  groups.length = 0;
  groups.push(...chosen);
  for (const [, list] of groups) for (const c of list) c.server = await start(c.args);
  for (const [, list] of groups) for (const c of list) await load((c.server as Server).url, 0.3); // warm-up: JIT
  const rows: string[][] = [];
  for (const [name, list] of groups) {
    for (let round = 0; round < ROUNDS; round++) {
      // A B C, then C B A: no contender always runs first after a pause.
      const order = round % 2 === 0 ? list : [...list].reverse();
      for (const c of order) {
        const server = c.server as Server;
        const before = await server.cpu();
        const r = await load(server.url, SECONDS);
        const after = await server.cpu();
        c.cpu.push((after - before) / Math.max(1, r.total));
        c.rates.push(r.rps);
        c.non2xx += r.non2xx;
        c.total += r.total;
      }
    }
    const base = median(list[0].rates);
    const baseCpu = median(list[0].cpu);
    for (const c of list) {
      const m = median(c.rates);
      const cpu = median(c.cpu);
      rows.push([
        name,
        c.label,
        rate(m),
        ratio(m, base),
        cpu.toFixed(1),
        // Requests per CPU second relative to bare: the server-side throughput ratio.
        ratio(baseCpu, cpu),
        `${((100 * c.non2xx) / Math.max(1, c.total)).toFixed(1)}%`,
        c.rates.map((x) => rate(x)).join(' / '),
      ]);
    }
  }
  console.log(
    `HTTP adapters: ${CONNECTIONS} connections, pipelining ${PIPELINING}, ${SECONDS} s per measurement, ${ROUNDS} interleaved rounds, Node ${process.version}\n`,
  );
  console.log(
    table(
      [
        'group',
        'server',
        'median req/s',
        'vs bare',
        'server CPU µs/req',
        'req per CPU-s vs bare',
        'non-2xx',
        'rounds (req/s)',
      ],
      rows,
    ),
  );
}

/**
 * The HTTP layer's own cost, in process and without sockets: `evaluate` per call (rules, client IP, key, the
 * memory store's decision, headers, and for denials the problem body), median of several passes. Far less noisy
 * than the socket figures, and directly comparable to the server CPU per request above.
 */
async function evaluateCost(): Promise<void> {
  const { Limiter } = await import('../packages/sluice/src/core/index.js');
  const { MemoryStore } = await import('../packages/sluice/src/memory/index.js');
  const { createHttpLimiter } = await import('../packages/sluice/src/http/index.js');
  const rows: string[][] = [];
  for (const [label, limit, headers] of [
    ['allowed, draft-11', 1e9, 'draft-11'],
    ['allowed, both', 1e9, 'both'],
    ['denied, draft-11', 1, 'draft-11'],
  ] as const) {
    const limiter = new Limiter({
      policies: [{ name: 'rl.api', quota: limit, window: 60, burst: limit }],
      store: new MemoryStore(),
    });
    const http = createHttpLimiter({ limiter, rules: [{ policies: ['rl.api'], key: 'ip' }], headers });
    const req = { method: 'GET', path: '/', headers: { host: 'x' }, remoteAddress: '::ffff:127.0.0.1' };
    const passes: number[] = [];
    for (let pass = 0; pass < 7; pass++) {
      const n = 100_000;
      const t0 = performance.now();
      for (let i = 0; i < n; i++) http.evaluate(req);
      if (pass > 0) passes.push(((performance.now() - t0) * 1000) / n);
    }
    rows.push([label, median(passes).toFixed(2)]);
  }
  console.log('\nHTTP layer alone (`evaluate`, memory store, in process):\n');
  console.log(table(['request', 'µs per call'], rows));
}

try {
  await main();
  await evaluateCost();
} finally {
  for (const c of children) c.kill('SIGTERM');
}
process.exit(0);
