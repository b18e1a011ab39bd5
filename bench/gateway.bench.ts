/**
 * The gateway against a fast local upstream, beside the same upstream reached directly and behind NGINX with
 * `limit_req` at an equivalent (never binding) rate, in one run: requests per second at saturation and p99
 * latency at a quarter of the gateway's saturation. Every server runs in its own process; the load generator
 * (autocannon) runs here. Rounds are interleaved (direct, sluice, nginx, direct, ...) and medians reported.
 *
 *   npx tsx bench/gateway.bench.ts            # needs nginx on PATH (Debian package "nginx")
 *   BENCH_SECONDS=5 BENCH_ROUNDS=3 npx tsx bench/gateway.bench.ts
 *   BENCH_BASELINE=/tmp/sluice-baseline npx tsx bench/gateway.bench.ts   # before/after in one run
 *
 * BENCH_BASELINE names the root of another copy of the repository (its packages/gateway/src, sharing this
 * node_modules): that gateway runs as one more interleaved target, and both gateways run from sources through tsx,
 * so a change is measured against its baseline under the same load on the same busy machine.
 */
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import autocannon from 'autocannon';
import { Agent, request } from 'undici';
import { median, rate, ratio, table } from './lib/stats.js';

const SECONDS = Number(process.env.BENCH_SECONDS ?? 4);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const CONNECTIONS = 32;
const ROOT = fileURLToPath(new URL('..', import.meta.url));
const BASELINE = process.env.BENCH_BASELINE;
const dir = mkdtempSync(join(tmpdir(), 'sluice-gw-bench-'));
const children: ChildProcess[] = [];

function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const s = createServer();
    s.listen(0, '127.0.0.1', () => {
      const p = (s.address() as { port: number }).port;
      s.close(() => resolve(p));
    });
  });
}

function start(cmd: string, args: string[], ready: RegExp, cwd = ROOT): Promise<ChildProcess> {
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, { cwd, stdio: ['ignore', 'pipe', 'pipe'] });
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
  readonly p99: number;
  readonly errors: number;
}

async function load(url: string, overallRate?: number): Promise<Run> {
  const run = autocannon({
    url,
    connections: overallRate === undefined ? CONNECTIONS : 8,
    duration: SECONDS,
    overallRate,
  });
  // autocannon's histogram has millisecond resolution; under a background load the probe below times single
  // requests with performance.now(), which resolves the sub-millisecond differences the target is about.
  const probe = overallRate === undefined ? undefined : await probeLatency(url, SECONDS * 1000 - 500);
  const r = await run;
  return { rps: r.requests.average, p99: probe ?? r.latency.p99, errors: r.errors + r.timeouts + r.non2xx };
}

const probeAgent = new Agent({ connections: 1 });

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
  const nginx = execFileSync('sh', ['-c', 'command -v nginx || true']).toString().trim();
  const up = await freePort();
  const gw = await freePort();
  const ng = await freePort();
  await start(
    process.execPath,
    [
      '-e',
      `require('http').createServer((q,s)=>{s.writeHead(200,{'content-type':'text/plain','content-length':2});s.end('ok')}).listen(${up},'127.0.0.1',()=>console.log('up'))`,
    ],
    /up/,
  );
  // One tier whose limits never bind, so every request takes the full path (identity, three buckets, headers).
  writeFileSync(
    join(dir, 'gw.yaml'),
    `rateLimiting:
  defaultTier: bench
  tiers:
    bench: { requestsPerMinute: 600000000, requestsPerHour: 1000000000, burstLimit: 100000000 }
  endpoints:
    - { pattern: /api/*, limit: 600000000, window: 60s }
logging: { level: warn }
reload: { watch: false }
`,
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
  ];
  await start(
    process.execPath,
    [
      ...(built
        ? ['packages/gateway/dist/bin/sluice.js']
        : ['--import', 'tsx', 'packages/gateway/src/bin/sluice.ts']),
      ...serve(gw),
    ],
    /^/,
  );
  await waitForPort(gw);
  const base = BASELINE === undefined ? undefined : await freePort();
  if (BASELINE !== undefined && base !== undefined) {
    console.log(`baseline gateway: ${BASELINE}/packages/gateway/src through tsx`);
    await start(
      process.execPath,
      ['--import', 'tsx', 'packages/gateway/src/bin/sluice.ts', ...serve(base)],
      /^/,
      BASELINE,
    );
    await waitForPort(base);
  }
  if (nginx !== '') {
    writeFileSync(
      join(dir, 'nginx.conf'),
      `worker_processes 1;
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
    const child = spawn(nginx, ['-c', join(dir, 'nginx.conf'), '-p', dir, '-g', 'daemon off;'], {
      stdio: 'inherit',
    });
    children.push(child);
    await waitForPort(ng);
  }
  const targets: [string, string][] = [
    ['direct', `http://127.0.0.1:${up}/api/x`],
    ['sluice gateway', `http://127.0.0.1:${gw}/api/x`],
  ];
  if (base !== undefined) targets.push(['sluice gateway (baseline)', `http://127.0.0.1:${base}/api/x`]);
  if (nginx !== '') targets.push(['nginx limit_req', `http://127.0.0.1:${ng}/api/x`]);
  for (const [, url] of targets) await load(url); // warm-up: JIT, keep-alive pools
  const sat: Record<string, Run[]> = Object.fromEntries(targets.map(([n]) => [n, []]));
  for (let round = 0; round < ROUNDS; round++) {
    for (const [name, url] of targets) sat[name].push(await load(url));
  }
  const rps = (n: string) => median(sat[n].map((r) => r.rps));
  const quarter = Math.round(rps('sluice gateway') / 4);
  const lat: Record<string, Run[]> = Object.fromEntries(targets.map(([n]) => [n, []]));
  for (let round = 0; round < ROUNDS; round++) {
    for (const [name, url] of targets) lat[name].push(await load(url, quarter));
  }
  const p99 = (n: string) => median(lat[n].map((r) => r.p99));
  const idle: Record<string, number[]> = Object.fromEntries(targets.map(([n]) => [n, []]));
  for (let round = 0; round < ROUNDS; round++) {
    for (const [name, url] of targets) idle[name].push(await probeLatency(url, 2000));
  }
  const idleP99 = (n: string) => median(idle[n]);
  const errors = Object.values(sat)
    .flat()
    .concat(Object.values(lat).flat())
    .reduce((a, r) => a + r.errors, 0);
  console.log(
    `Saturation: ${CONNECTIONS} connections, ${SECONDS} s per run, ${ROUNDS} interleaved rounds. Latency: p99 of a sequential probe while autocannon holds ${quarter} req/s (a quarter of the gateway's saturation, 8 connections) on the same target.\n`,
  );
  console.log(
    table(
      [
        'target',
        'req/s (median)',
        'vs direct',
        'vs nginx',
        ...(base === undefined ? [] : ['vs baseline']),
        'probe p99 ms at 1/4 load',
        'p99 added vs direct',
        'probe p99 ms, no other load',
        'added',
      ],
      targets.map(([n]) => [
        n,
        rate(rps(n)),
        ratio(rps(n), rps('direct')),
        sat['nginx limit_req'] ? ratio(rps(n), rps('nginx limit_req')) : 'n/a',
        ...(base === undefined ? [] : [ratio(rps(n), rps('sluice gateway (baseline)'))]),
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
