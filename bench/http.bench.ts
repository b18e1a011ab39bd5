/**
 * Requests per second of a hello-world server bare, with Sluice, and with the framework's usual limiter
 * (express-rate-limit on Express, @fastify/rate-limit on Fastify), for node:http, Express and Fastify; once with
 * limits that never bind and once with nearly every request denied (429).
 *
 * This machine's noise (a shared 2-core VM) moves single measurements by 30% and more, so the figure reported is
 * the median of per-round ratios: in every round each contender runs once, back to back (A B C, then C B A), and
 * its rate is divided by the bare server's rate of the same round; rounds repeat over several fresh server
 * processes (a process can settle in a slow or a fast mode for its lifetime). Servers are pinned to one CPU and
 * the load generator (wrk when installed, else autocannon) to the other, see `lib/load.ts`. Each server also
 * reports its own CPU time, and CPU microseconds per request show what a limiter itself costs.
 *
 *   npx tsx bench/http.bench.ts
 *   BENCH_ONLY=fastify BENCH_PROCESSES=4 BENCH_ROUNDS=10 npx tsx bench/http.bench.ts
 *   BENCH_LOADGEN=autocannon BENCH_PIPELINING=10 npx tsx bench/http.bench.ts
 *   BENCH_SLUICE_HEADERS=none npx tsx bench/http.bench.ts  # Sluice without rate-limit headers
 *   BENCH_NOOP=1 npx tsx bench/http.bench.ts               # also an empty middleware / onRequest hook
 *   BENCH_FLOOR=1 BENCH_ONLY=node npx tsx bench/http.bench.ts  # also Sluice's answer written precomputed
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import {
  arrangement,
  LOADGEN,
  LOADGEN_CPUS,
  type LoadResult,
  pinned,
  pinTree,
  runLoad,
  SERVER_CPUS,
} from './lib/load.js';
import { median, rate, table } from './lib/stats.js';

const SECONDS = Number(process.env.BENCH_SECONDS ?? 1);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 8);
/** Fresh server processes per group, each measured for ROUNDS rounds. */
const PROCESSES = Number(process.env.BENCH_PROCESSES ?? 3);
/** Only the groups whose name contains this text, for example `node` or `denied`. */
const ONLY = process.env.BENCH_ONLY ?? '';
const CONNECTIONS = 50;
/** Requests in flight per connection, with autocannon only (wrk keeps one per connection). */
const PIPELINING = Number(process.env.BENCH_PIPELINING ?? (LOADGEN === 'wrk' ? 1 : 10));
const SERVER = fileURLToPath(new URL('./http/server.ts', import.meta.url));
const children = new Set<ChildProcess>();

interface Server {
  readonly url: string;
  /** CPU microseconds the server process has used so far. */
  cpu(): Promise<number>;
  stop(): void;
}

interface Contender {
  readonly label: string;
  readonly args: [framework: string, variant: string, mode: string];
  readonly rates: number[];
  /** Server CPU microseconds per request, per round. */
  readonly cpu: number[];
  /** Per round: this contender's rate over the bare server's rate in the same round. */
  readonly rateRatios: number[];
  /** Per round: the bare server's CPU per request over this contender's. */
  readonly cpuRatios: number[];
  non2xx: number;
  total: number;
}

function start(args: readonly string[]): Promise<Server> {
  const [cmd, argv] = pinned(SERVER_CPUS, process.execPath, ['--import', 'tsx', SERVER, ...args]);
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, argv, { stdio: ['pipe', 'pipe', 'inherit'] });
    children.add(child);
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
            stop: () => {
              children.delete(child);
              child.kill('SIGTERM');
            },
          });
        }
        const cpu = /^\{"cpu":(\d+)\}$/.exec(line);
        if (cpu) waiting.shift()?.(Number(cpu[1]));
      }
    });
    child.once('exit', (code) => {
      if (children.has(child)) reject(new Error(`server ${args.join(' ')} exited ${code}`));
    });
  });
}

function load(url: string, seconds: number): Promise<LoadResult> {
  return runLoad({ url, connections: CONNECTIONS, seconds, pipelining: PIPELINING });
}

function group(framework: string, mode: string, peer: string | undefined): Contender[] {
  const make = (label: string, variant: string): Contender => ({
    label,
    args: [framework, variant, mode],
    rates: [],
    cpu: [],
    rateRatios: [],
    cpuRatios: [],
    non2xx: 0,
    total: 0,
  });
  const list = [make(`${framework} bare`, 'bare'), make(`${framework} + sluice`, 'sluice')];
  if (peer) list.push(make(`${framework} + ${peer}`, 'peer'));
  // BENCH_NOOP=1 adds an empty middleware (or hook): the floor any limiter in that framework starts from.
  if (process.env.BENCH_NOOP === '1' && framework !== 'node')
    list.push(make(`${framework} + empty middleware`, 'noop'));
  // BENCH_FLOOR=1 adds node:http writing Sluice's answer precomputed: what sending those bytes costs by itself.
  if (process.env.BENCH_FLOOR === '1' && framework === 'node')
    list.push(make('node, same bytes precomputed', 'floor'));
  return list;
}

/** The lower and upper quartile, as "0.91x to 0.97x": how widely the per-round ratios spread. */
function quartiles(values: readonly number[]): string {
  const s = [...values].sort((a, b) => a - b);
  const q = (f: number) => s[Math.min(s.length - 1, Math.floor(f * (s.length - 1) + 0.5))];
  return `${q(0.25).toFixed(2)}x to ${q(0.75).toFixed(2)}x`;
}

async function measureGroup(list: Contender[]): Promise<void> {
  for (let p = 0; p < PROCESSES; p++) {
    const servers: Server[] = [];
    for (const c of list) servers.push(await start(c.args));
    for (const s of servers) await load(s.url, 1); // warm-up: JIT, connections
    for (let round = 0; round < ROUNDS; round++) {
      // A B C, then C B A: no contender always runs first after a pause.
      const order = round % 2 === 0 ? list.map((_, i) => i) : list.map((_, i) => list.length - 1 - i);
      const rps: number[] = [];
      const cpu: number[] = [];
      for (const i of order) {
        const before = await servers[i].cpu();
        const r = await load(servers[i].url, SECONDS);
        const after = await servers[i].cpu();
        rps[i] = r.rps;
        cpu[i] = (after - before) / Math.max(1, r.total);
        list[i].rates.push(r.rps);
        list[i].cpu.push(cpu[i]);
        list[i].non2xx += r.non2xx;
        list[i].total += r.total;
      }
      for (let i = 0; i < list.length; i++) {
        list[i].rateRatios.push(rps[i] / rps[0]);
        list[i].cpuRatios.push(cpu[0] / cpu[i]);
      }
    }
    for (const s of servers) s.stop();
  }
}

async function main(): Promise<void> {
  // autocannon runs in this process: keep it on the load generator's CPU.
  if (LOADGEN === 'autocannon') pinTree(process.pid, LOADGEN_CPUS);
  const groups: [string, Contender[]][] = [];
  for (const mode of ['allowed', 'denied']) {
    groups.push([`node:http, ${mode}`, group('node', mode, undefined)]);
    groups.push([`Express, ${mode}`, group('express', mode, 'express-rate-limit')]);
    groups.push([`Fastify, ${mode}`, group('fastify', mode, '@fastify/rate-limit')]);
  }
  const chosen = groups.filter(([name]) => name.toLowerCase().includes(ONLY.toLowerCase()));
  const rows: string[][] = [];
  for (const [name, list] of chosen) {
    await measureGroup(list);
    for (const c of list) {
      rows.push([
        name,
        c.label,
        rate(median(c.rates)),
        `${median(c.rateRatios).toFixed(2)}x`,
        c === list[0] ? '' : quartiles(c.rateRatios),
        median(c.cpu).toFixed(1),
        // Requests per CPU second relative to bare: the server-side throughput ratio.
        `${median(c.cpuRatios).toFixed(2)}x`,
        `${((100 * c.non2xx) / Math.max(1, c.total)).toFixed(1)}%`,
      ]);
    }
  }
  console.log(
    `HTTP adapters: ${arrangement()}; ${CONNECTIONS} connections${LOADGEN === 'autocannon' ? `, pipelining ${PIPELINING}` : ''}, ${SECONDS} s per measurement, ${ROUNDS} interleaved rounds in each of ${PROCESSES} fresh sets of server processes, Node ${process.version}\n`,
  );
  console.log(
    table(
      [
        'group',
        'server',
        'median req/s',
        'vs bare (median of round ratios)',
        'middle half of round ratios',
        'server CPU µs/req',
        'req per CPU-s vs bare',
        'non-2xx',
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
