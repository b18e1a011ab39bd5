/**
 * The gateway against a fast local upstream, beside the same upstream reached directly, behind a bare Node.js
 * proxy (the ceiling of Node's HTTP stack: no limiting at all), the same bare proxy carrying the gateway's header
 * lines (forwarding fields and request id upstream, request id and rate-limit fields back, with none of the work
 * behind them), and behind NGINX with `limit_req` at an equivalent (never binding) rate, in one run: requests per
 * second at saturation, the CPU each proxy spends per request, and p99 latency at a quarter of the gateway's
 * saturation. Every server runs in its own process.
 *
 * Placement (see `lib/load.ts`): for saturation, the proxies under test (gateway, bare proxy, NGINX) are pinned
 * to the last CPU, the upstream and the load generator (wrk when installed) to the first; for latency every
 * process is unpinned again. Saturation rounds are
 * interleaved (direct, sluice, ..., nginx, then reversed) and each round's rate is divided by NGINX's rate of the
 * same round; the median of those round ratios is reported. Latency: a sequential probe in this process times
 * single requests with `performance.now()` while a separate process (evenly spaced requests) holds a quarter of
 * the gateway's saturation rate on the same target, so the probe never waits behind the load generator's loop.
 *
 *   npx tsx bench/gateway.bench.ts            # needs nginx on PATH (Debian package "nginx")
 *   BENCH_SECONDS=5 BENCH_ROUNDS=3 npx tsx bench/gateway.bench.ts
 *   BENCH_BASELINE=/tmp/sluice-baseline npx tsx bench/gateway.bench.ts   # before/after in one run
 *   BENCH_THREADS=2 BENCH_SERVER_CPUS=2-3 BENCH_LOADGEN_CPUS=0-1 npx tsx bench/gateway.bench.ts   # scaling
 *   BENCH_HEADERS=none npx tsx bench/gateway.bench.ts   # the gateway without rate-limit headers
 *
 * BENCH_THREADS=N runs the gateway with `--threads N` (Node.js >= 22.12 on Linux) against NGINX with N worker
 * processes; with BENCH_SERVER_CPUS and BENCH_LOADGEN_CPUS (taskset lists) the proxies get N cores of their own
 * and the load generator and upstream the others, which is how scaling is measured on a machine with spare cores.
 *
 * BENCH_BASELINE names the root of another copy of the repository (its packages/gateway/src, sharing this
 * node_modules): that gateway runs as one more interleaved target, and both gateways run from sources through tsx,
 * so a change is measured against its baseline under the same load on the same busy machine.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Agent, request } from 'undici';
import { freePort } from '../test/support/redis-server.js';
import { BENCH_LIMITS_YAML } from './gateway/limits.js';
import {
  ALL_CPUS,
  arrangement,
  cpuSeconds,
  LOADGEN_CPUS,
  onPath,
  pinned,
  pinTree,
  runLoad,
  SERVER_CPUS,
} from './lib/load.js';
import { median, rate, ratio, table } from './lib/stats.js';

const SECONDS = Number(process.env.BENCH_SECONDS ?? 3);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 5);
const CONNECTIONS = 32;
const ROOT = fileURLToPath(new URL('..', import.meta.url));
const BASELINE = process.env.BENCH_BASELINE;
const THREADS = Number(process.env.BENCH_THREADS ?? 1);
/** BENCH_HEADERS=none (or draft-11, legacy): the gateway's `headers.mode`, to see what the rate-limit headers cost. */
const HEADERS = process.env.BENCH_HEADERS;
if (!Number.isInteger(THREADS) || THREADS < 1)
  throw new Error(`BENCH_THREADS must be an integer >= 1, got ${THREADS}`);
const dir = mkdtempSync(join(tmpdir(), 'sluice-gw-bench-'));
const children: ChildProcess[] = [];

function start(
  cpus: string | undefined,
  cmd: string,
  args: string[],
  ready: RegExp,
  cwd = ROOT,
): Promise<ChildProcess> {
  const [c, argv] = pinned(cpus, cmd, args);
  return new Promise((resolve, reject) => {
    const child = spawn(c, argv, { cwd, stdio: ['ignore', 'pipe', 'pipe'] });
    children.push(child);
    let out = '';
    const onData = (d: Buffer) => {
      out += d.toString();
      if (ready.test(out)) resolve(child);
    };
    child.stdout?.on('data', onData);
    child.stderr?.on('data', onData);
    child.once('exit', (code) => reject(new Error(`${cmd} exited ${code}: ${out}`)));
    if (ready.source === '^') resolve(child);
  });
}

async function waitForPort(port: number): Promise<void> {
  for (let i = 0; i < 400; i++) {
    try {
      await fetch(`http://127.0.0.1:${port}/`);
      return;
    } catch {
      await new Promise((r) => setTimeout(r, 50));
    }
  }
  throw new Error(`port ${port} did not open`);
}

interface Run {
  readonly rps: number;
  readonly errors: number;
  /** CPU microseconds the proxy process spent per request, where procfs shows it. */
  readonly cpuPerRequest: number | undefined;
}

async function saturate(url: string, pid: number | undefined): Promise<Run> {
  const before = cpuSeconds(pid);
  const r = await runLoad({ url, connections: CONNECTIONS, seconds: SECONDS });
  const after = cpuSeconds(pid);
  return {
    rps: r.rps,
    errors: r.errors + r.non2xx,
    cpuPerRequest:
      before === undefined || after === undefined ? undefined : ((after - before) * 1e6) / r.total,
  };
}

/** The probe's p99 while a separate process holds `overallRate` requests per second on the same target. */
async function underLoad(url: string, overallRate: number): Promise<{ p99: number; errors: number }> {
  const child = spawn(
    process.execPath,
    [
      '--import',
      'tsx',
      join(ROOT, 'bench/gateway/background-load.ts'),
      url,
      String(overallRate),
      String(SECONDS),
    ],
    { stdio: ['ignore', 'pipe', 'inherit'] },
  );
  let out = '';
  let onStarted: () => void = () => undefined;
  const started = new Promise<void>((resolve) => {
    onStarted = resolve;
  });
  child.stdout.on('data', (d: Buffer) => {
    out += d.toString();
    if (out.includes('started')) onStarted();
  });
  const done = new Promise<void>((resolve) => child.once('close', () => resolve()));
  await started;
  await new Promise((r) => setTimeout(r, 200)); // the ramp to the fixed rate
  const p99 = await probeLatency(url, SECONDS * 1000 - 500);
  await done;
  const result = JSON.parse(out.trim().split('\n').at(-1) ?? '{}') as { errors?: number };
  return { p99, errors: result.errors ?? 1 };
}

const probeAgent = new Agent({ connections: 1 });
const WITH_FIELDS = "node proxy + gateway's header lines";

/** The response fields the gateway adds to the upstream's, except the request id (the bare proxy makes its own). */
async function gatewayFields(direct: string, gateway: string): Promise<Record<string, string>> {
  const plain = await request(direct, { dispatcher: probeAgent });
  await plain.body.dump();
  const proxied = await request(gateway, { dispatcher: probeAgent });
  await proxied.body.dump();
  const out: Record<string, string> = {};
  for (const [name, value] of Object.entries(proxied.headers)) {
    if (name in plain.headers || name === 'x-request-id' || typeof value !== 'string') continue;
    out[name] = value;
  }
  return out;
}

/** Sequential requests for `ms` milliseconds; returns the p99 latency in milliseconds. */
async function probeLatency(url: string, ms: number): Promise<number> {
  const times: number[] = [];
  const until = performance.now() + ms;
  while (performance.now() < until) {
    const t0 = performance.now();
    const res = await request(url, { dispatcher: probeAgent });
    await res.body.dump();
    times.push(performance.now() - t0);
  }
  times.sort((a, b) => a - b);
  return times[Math.floor(times.length * 0.99)];
}

async function main(): Promise<void> {
  const nginx = onPath('nginx') ? 'nginx' : '';
  // The probe runs here: keep this process off the proxies' CPU.
  pinTree(process.pid, LOADGEN_CPUS);
  const up = await freePort();
  const gw = await freePort();
  const bare = await freePort();
  const ng = await freePort();
  const upstream = await start(
    LOADGEN_CPUS,
    process.execPath,
    [
      '-e',
      `require('http').createServer((q,s)=>{s.writeHead(200,{'content-type':'text/plain','content-length':2});s.end('ok')}).listen(${up},'127.0.0.1',()=>console.log('up'))`,
    ],
    /up/,
  );
  writeFileSync(
    join(dir, 'gw.yaml'),
    `${BENCH_LIMITS_YAML}logging: { level: warn }\nreload: { watch: false }\n` +
      (HEADERS === undefined ? '' : `headers: { mode: ${HEADERS} }\n`),
  );
  // The built command when present (what operators run); from source through tsx otherwise.
  const built = BASELINE === undefined && existsSync(join(ROOT, 'packages/gateway/dist/bin/sluice.js'));
  console.log(`gateway: ${built ? 'packages/gateway/dist (npm run build)' : 'sources through tsx'}`);
  const serve = (port: number) => [
    'serve',
    '--config',
    join(dir, 'gw.yaml'),
    '--upstream',
    `http://127.0.0.1:${up}`,
    '--port',
    String(port),
    // Always given: without it the gateway runs one thread per core where it can.
    '--threads',
    String(THREADS),
  ];
  const pids: Record<string, number | undefined> = { direct: upstream.pid };
  const gateway = await start(
    SERVER_CPUS,
    process.execPath,
    [
      ...(built
        ? ['packages/gateway/dist/bin/sluice.js']
        : ['--import', 'tsx', 'packages/gateway/src/bin/sluice.ts']),
      ...serve(gw),
    ],
    /^/,
  );
  pids['sluice gateway'] = gateway.pid;
  await waitForPort(gw);
  const base = BASELINE === undefined ? undefined : await freePort();
  if (BASELINE !== undefined && base !== undefined) {
    console.log(`baseline gateway: ${BASELINE}/packages/gateway/src through tsx`);
    const b = await start(
      SERVER_CPUS,
      process.execPath,
      ['--import', 'tsx', 'packages/gateway/src/bin/sluice.ts', ...serve(base)],
      /^/,
      BASELINE,
    );
    pids['sluice gateway (baseline)'] = b.pid;
    await waitForPort(base);
  }
  // The bare proxy, and the same proxy carrying the gateway's header lines both ways (its rate-limit fields as the
  // gateway answered one request), to split the gateway's extra CPU into what the header bytes cost and what its
  // own code costs.
  const bareProxy = (port: number, ...fields: string[]) =>
    start(
      SERVER_CPUS,
      process.execPath,
      [
        '--import',
        'tsx',
        join(ROOT, 'bench/gateway/bare-proxy.ts'),
        `http://127.0.0.1:${up}`,
        String(port),
        ...fields,
      ],
      /listening/,
    );
  pids['node proxy, no limiting'] = (await bareProxy(bare)).pid;
  const withFields = await freePort();
  const fields = await gatewayFields(`http://127.0.0.1:${up}/api/x`, `http://127.0.0.1:${gw}/api/x`);
  pids[WITH_FIELDS] = (await bareProxy(withFields, JSON.stringify(fields))).pid;
  if (nginx !== '') {
    writeFileSync(
      join(dir, 'nginx.conf'),
      `worker_processes ${THREADS};
pid ${dir}/nginx.pid;
error_log ${dir}/error.log warn;
events { worker_connections 1024; }
http {
  access_log off;
  client_body_temp_path ${dir}/body; proxy_temp_path ${dir}/proxy; fastcgi_temp_path ${dir}/fcgi; uwsgi_temp_path ${dir}/uwsgi; scgi_temp_path ${dir}/scgi;
  limit_req_zone $binary_remote_addr zone=bench:10m rate=10000000r/s;
  upstream api { server 127.0.0.1:${up}; keepalive 64; }
  server {
    listen 127.0.0.1:${ng};
    location / {
      limit_req zone=bench burst=100000000 nodelay;
      proxy_http_version 1.1;
      proxy_set_header Connection "";
      proxy_pass http://api;
    }
  }
}
`,
    );
    const [cmd, argv] = pinned(SERVER_CPUS, nginx, [
      '-c',
      join(dir, 'nginx.conf'),
      '-p',
      dir,
      '-g',
      'daemon off;',
    ]);
    const child = spawn(cmd, argv, { stdio: 'inherit' });
    children.push(child);
    pids['nginx limit_req'] = child.pid;
    await waitForPort(ng);
  }
  const targets: [string, string][] = [
    ['direct', `http://127.0.0.1:${up}/api/x`],
    ['sluice gateway', `http://127.0.0.1:${gw}/api/x`],
  ];
  if (base !== undefined) targets.push(['sluice gateway (baseline)', `http://127.0.0.1:${base}/api/x`]);
  targets.push(['node proxy, no limiting', `http://127.0.0.1:${bare}/api/x`]);
  targets.push([WITH_FIELDS, `http://127.0.0.1:${withFields}/api/x`]);
  if (nginx !== '') targets.push(['nginx limit_req', `http://127.0.0.1:${ng}/api/x`]);
  const reference = nginx === '' ? 'direct' : 'nginx limit_req';
  for (const [, url] of targets) await runLoad({ url, connections: CONNECTIONS, seconds: 1 }); // warm-up
  const sat: Record<string, Run[]> = Object.fromEntries(targets.map(([n]) => [n, []]));
  const vsRef: Record<string, number[]> = Object.fromEntries(targets.map(([n]) => [n, []]));
  for (let round = 0; round < ROUNDS; round++) {
    const order = round % 2 === 0 ? targets : [...targets].reverse();
    const got: Record<string, number> = {};
    for (const [name, url] of order) {
      const r = await saturate(url, pids[name]);
      sat[name].push(r);
      got[name] = r.rps;
    }
    for (const [name] of targets) vsRef[name].push(got[name] / got[reference]);
  }
  const rps = (n: string) => median(sat[n].map((r) => r.rps));
  const cpu = (n: string) => {
    const v = sat[n].map((r) => r.cpuPerRequest).filter((x): x is number => x !== undefined);
    return v.length === 0 ? 'n/a' : median(v).toFixed(1);
  };
  const quarter = Math.round(rps('sluice gateway') / 4);
  // Latency with every process free to run on any CPU, as in a deployment: pinned, each hop crosses CPUs and
  // waits for an idle virtual CPU to wake (an idle NGINX measured a p99 of 3 ms that way), which is the
  // hypervisor's latency, not the proxy's.
  for (const pid of [process.pid, ...Object.values(pids)]) if (pid !== undefined) pinTree(pid, ALL_CPUS);
  const lat: Record<string, number[]> = Object.fromEntries(targets.map(([n]) => [n, []]));
  let errors = Object.values(sat)
    .flat()
    .reduce((a, r) => a + r.errors, 0);
  for (let round = 0; round < ROUNDS; round++) {
    for (const [name, url] of targets) {
      const r = await underLoad(url, quarter);
      lat[name].push(r.p99);
      errors += r.errors;
    }
  }
  const p99 = (n: string) => median(lat[n]);
  const idle: Record<string, number[]> = Object.fromEntries(targets.map(([n]) => [n, []]));
  for (let round = 0; round < ROUNDS; round++) {
    for (const [name, url] of targets) idle[name].push(await probeLatency(url, 2000));
  }
  const idleP99 = (n: string) => median(idle[n]);
  console.log(
    `${THREADS > 1 ? `${THREADS} gateway threads and ${THREADS} NGINX workers; ` : ''}${arrangement()} for saturation (upstream on the load generator's CPU), every process unpinned for latency. Saturation: ${CONNECTIONS} connections, ${SECONDS} s per run, ${ROUNDS} interleaved rounds, ratios to ${reference} per round then the median. Latency: p99 of a sequential probe while another process holds ${quarter} req/s (a quarter of the gateway's saturation, 8 connections) on the same target.\n`,
  );
  console.log(
    table(
      [
        'target',
        'req/s (median)',
        `vs ${reference} (median of round ratios)`,
        'vs direct',
        'proxy CPU µs/req',
        'probe p99 ms at 1/4 load',
        'p99 added vs direct',
        'probe p99 ms, no other load',
        'added',
      ],
      targets.map(([n]) => [
        n,
        rate(rps(n)),
        `${median(vsRef[n]).toFixed(2)}x`,
        ratio(rps(n), rps('direct')),
        n === 'direct' ? `${cpu(n)} (upstream)` : cpu(n),
        p99(n).toFixed(3),
        `${(p99(n) - p99('direct')).toFixed(3)} ms`,
        idleP99(n).toFixed(3),
        `${(idleP99(n) - idleP99('direct')).toFixed(3)} ms`,
      ]),
    ),
  );
  console.log(`\nErrors, timeouts and non-2xx over all runs: ${errors}.`);
  if (nginx === '') console.log('nginx not found on PATH: NGINX column skipped (apt-get install nginx).');
}

main()
  .catch((e) => {
    console.error(e);
    process.exitCode = 1;
  })
  .finally(() => {
    for (const c of children) c.kill('SIGTERM');
    void probeAgent.close();
    rmSync(dir, { recursive: true, force: true });
  });
