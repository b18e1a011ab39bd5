/**
 * Decisions per second of Sluice as the rate-limit service of other proxies, in one run: the HTTP decision API
 * and the Envoy rate limit service (gRPC), each over the memory store and Redis, and NGINX `auth_request` asking
 * Sluice in the same table as NGINX's own `limit_req` (and NGINX without a limit, the ceiling). Both NGINX
 * variants serve the same small static file, so the only difference is the limit. Limits never bind: every
 * decision is a full one that admits. Sluice runs in its own process, NGINX in its own, one worker each; the HTTP
 * load generator (autocannon) runs here, the gRPC one in a child process. Rounds are interleaved, medians
 * reported.
 *
 *   npx tsx bench/decision.bench.ts
 *   BENCH_SECONDS=5 BENCH_ROUNDS=3 npx tsx bench/decision.bench.ts
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import autocannon from 'autocannon';
import {
  authRequestConfig,
  NGINX_BIN,
  processConfig,
  type RunningNginx,
  startNginx,
  tempPaths,
} from '../test/support/nginx.js';
import { freePort, type RedisServer, startRedisServer } from '../test/support/redis-server.js';
import { runWorker } from './lib/child.js';
import { median, rate, ratio, table } from './lib/stats.js';

const SECONDS = Number(process.env.BENCH_SECONDS ?? 3);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 2);
const CONNECTIONS = 32;
const ROOT = fileURLToPath(new URL('..', import.meta.url));
const tsx = fileURLToPath(new URL('../node_modules/tsx/dist/loader.mjs', import.meta.url));

interface Run {
  readonly rps: number;
  readonly p99: number;
  readonly errors: number;
}

function startSluice(args: string[]): Promise<{ child: ChildProcess; decision: string; envoy: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(
      process.execPath,
      ['--import', tsx, join(ROOT, 'bench/decision/server.ts'), ...args],
      {
        stdio: ['ignore', 'pipe', 'inherit'],
      },
    );
    let out = '';
    child.stdout?.on('data', (d: Buffer) => {
      out += d.toString();
      const m = /ready (\S+) (\S+)/.exec(out);
      if (m !== null) resolve({ child, decision: m[1], envoy: m[2] });
    });
    child.once('exit', (code) => reject(new Error(`sluice server exited ${code}: ${out}`)));
  });
}

function startCeiling(): Promise<{ child: ChildProcess; address: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--import', tsx, join(ROOT, 'bench/decision/grpc-ceiling.ts')], {
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    let out = '';
    child.stdout?.on('data', (d: Buffer) => {
      out += d.toString();
      const m = /ready (\S+)/.exec(out);
      if (m !== null) resolve({ child, address: m[1] });
    });
    child.once('exit', (code) => reject(new Error(`grpc ceiling exited ${code}: ${out}`)));
  });
}

function stopChild(child: ChildProcess): Promise<void> {
  return new Promise((resolve) => {
    if (child.exitCode !== null) return resolve();
    child.removeAllListeners('exit');
    child.once('exit', () => resolve());
    child.kill('SIGTERM');
  });
}

async function http(url: string, headers?: Record<string, string>, rotate = false): Promise<Run> {
  let i = 0;
  // `requests` (autocannon's per-request hook) is not in the shared declaration of bench/lib: passed through a cast.
  const options = {
    url,
    connections: CONNECTIONS,
    duration: SECONDS,
    headers,
    requests: rotate
      ? [
          {
            setupRequest: (req: { headers: Record<string, string> }) => {
              i = (i + 1) % 1000;
              return { ...req, headers: { ...req.headers, 'x-real-ip': `10.0.${i >> 8}.${i & 255}` } };
            },
          },
        ]
      : undefined,
  };
  const r = await autocannon(options as Parameters<typeof autocannon>[0]);
  return { rps: r.requests.average, p99: r.latency.p99, errors: r.errors + r.timeouts + r.non2xx };
}

const grpc = (address: string) =>
  runWorker<Run>(new URL('./decision/grpc-load.ts', import.meta.url), [address, String(SECONDS)]);

async function main(): Promise<void> {
  const haveNginx = existsSync(NGINX_BIN);
  const www = mkdtempSync(join(tmpdir(), 'sluice-decision-www-'));
  writeFileSync(join(www, 'index.html'), 'ok\n');
  let redis: RedisServer | undefined;
  try {
    redis = await startRedisServer();
  } catch (e) {
    process.stderr.write(`  redis-server unavailable, Redis rows skipped: ${(e as Error).message}\n`);
  }
  const memory = await startSluice(['memory']);
  const ceiling = await startCeiling();
  const onRedis =
    redis === undefined ? undefined : await startSluice(['redis', `redis://127.0.0.1:${redis.port}`]);
  const nginx: Record<string, RunningNginx> = {};
  if (haveNginx) {
    const p1 = await freePort();
    nginx.auth = await startNginx(
      (prefix) => authRequestConfig({ port: p1, decision: new URL(memory.decision).host, root: www, prefix }),
      p1,
    );
    const p2 = await freePort();
    nginx.limitReq = await startNginx(
      (prefix) => `${processConfig(prefix)}
http {
${tempPaths(prefix)}  access_log off;
  limit_req_zone $binary_remote_addr zone=bench:10m rate=100000000r/s;
  server {
    listen 127.0.0.1:${p2};
    location / {
      limit_req zone=bench burst=100000000 nodelay;
      root ${www};
    }
  }
}
`,
      p2,
    );
    const p3 = await freePort();
    nginx.plain = await startNginx(
      (prefix) => `${processConfig(prefix)}
http {
${tempPaths(prefix)}  access_log off;
  server {
    listen 127.0.0.1:${p3};
    location / { root ${www}; }
  }
}
`,
      p3,
    );
  }
  const ask = { 'x-original-uri': '/api/items', 'x-original-method': 'GET' };
  const inProcess = (kind: string) =>
    runWorker<Run>(new URL('./decision/in-process.ts', import.meta.url), [kind, String(SECONDS)]);
  const cases: [string, () => Promise<Run>][] = [
    ['decision logic in process (no transport), memory', () => inProcess('http')],
    ['Envoy service logic in process (no transport), memory', () => inProcess('grpc')],
    ['decision API (HTTP), memory store', () => http(memory.decision, ask, true)],
    ['Envoy RLS (gRPC), memory store', () => grpc(memory.envoy)],
    ['grpc-js, constant answer (transport ceiling)', () => grpc(ceiling.address)],
  ];
  if (onRedis !== undefined) {
    cases.push(['decision API (HTTP), Redis store', () => http(onRedis.decision, ask, true)]);
    cases.push(['Envoy RLS (gRPC), Redis store', () => grpc(onRedis.envoy)]);
  }
  if (haveNginx) {
    cases.push(['NGINX auth_request -> Sluice (memory)', () => http(`http://127.0.0.1:${nginx.auth.port}/`)]);
    cases.push(['NGINX limit_req', () => http(`http://127.0.0.1:${nginx.limitReq.port}/`)]);
    cases.push(['NGINX, no limit (ceiling)', () => http(`http://127.0.0.1:${nginx.plain.port}/`)]);
  }
  const runs = new Map<string, Run[]>();
  try {
    // One unrecorded pass: JIT, connection pools and NGINX keepalive to Sluice are warm before measuring.
    for (const [, run] of cases) await run();
    for (let r = 0; r < ROUNDS; r++) {
      const order = r % 2 === 0 ? cases : [...cases].reverse();
      for (const [name, run] of order) {
        const result = await run();
        runs.set(name, [...(runs.get(name) ?? []), result]);
        process.stderr.write(
          `  ${name.padEnd(40)} ${rate(result.rps)}/s p99 ${result.p99.toFixed(2)} ms errors ${result.errors}\n`,
        );
      }
    }
  } finally {
    for (const n of Object.values(nginx)) await n.stop();
    await stopChild(memory.child);
    await stopChild(ceiling.child);
    if (onRedis !== undefined) await stopChild(onRedis.child);
    await redis?.stop();
    rmSync(www, { recursive: true, force: true });
  }
  const med = (name: string, f: (r: Run) => number) => median((runs.get(name) ?? []).map(f));
  const base = haveNginx ? med('NGINX limit_req', (r) => r.rps) : Number.NaN;
  console.log(
    `### Decision services: decisions per second (median of ${ROUNDS} interleaved rounds of ${SECONDS} s)\n`,
  );
  console.log(
    table(
      ['path', 'decisions/s', 'p99 ms', 'vs NGINX limit_req', 'errors'],
      cases.map(([name]) => [
        name,
        rate(med(name, (r) => r.rps)),
        med(name, (r) => r.p99) === 0 ? 'n/a' : med(name, (r) => r.p99).toFixed(2),
        haveNginx
          ? ratio(
              med(name, (r) => r.rps),
              base,
            )
          : 'n/a',
        String((runs.get(name) ?? []).reduce((s, r) => s + r.errors, 0)),
      ]),
    ),
  );
}

await main();
