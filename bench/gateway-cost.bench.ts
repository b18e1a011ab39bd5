/**
 * CPU per request of gateways side by side: this tree and another copy of the repository (BENCH_BASELINE), each
 * under the logging settings of a set, beside the bare Node.js proxy (`gateway/bare-proxy.ts`), all pinned to the
 * last CPU while wrk and the upstream run on the first. Every process's CPU time comes from procfs around each
 * wrk run; rounds alternate the order (A B C ..., then ... C B A) and every figure is a median over rounds with
 * its spread (lowest and highest), as is each round's ratio to the reference, so the machine's noise shows.
 *
 *   BENCH_BASELINE=/tmp/base npx tsx bench/gateway-cost.bench.ts            # set "path": both trees at warn
 *   BENCH_BASELINE=/tmp/base BENCH_SET=log npx tsx bench/gateway-cost.bench.ts   # the request log's cost
 *   BENCH_SET=lines npx tsx bench/gateway-cost.bench.ts    # this tree only: requests all against none
 *   BENCH_SET=headers npx tsx bench/gateway-cost.bench.ts  # the rate-limit header lines: gateway with and
 *                                  # without them, beside the bare proxy with and without the same bytes
 *   BENCH_SECONDS=4 BENCH_ROUNDS=8 ...
 *   BENCH_BUILT=1 ...              # gateways from each tree's dist (run `npm run build` in each first)
 *
 * Gateways run from sources through tsx (both trees alike), or with BENCH_BUILT=1 from each tree's built dist, as
 * `sluice serve` runs in production: tsx's transform names every class-field arrow function with a call per
 * instance, which the built gateway does not pay. Each writes its standard output to a file, as a gateway logging
 * to a file or a collector's pipe does. BENCH_BASELINE's tree must have its own node_modules.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { closeSync, mkdtempSync, openSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { get } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { freePort } from '../test/support/redis-server.js';
import { BENCH_LIMITS_YAML } from './gateway/limits.js';
import { arrangement, cpuSeconds, LOADGEN_CPUS, pinned, runLoad, SERVER_CPUS } from './lib/load.js';
import { median, table } from './lib/stats.js';

const SECONDS = Number(process.env.BENCH_SECONDS ?? 3);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 6);
const CONNECTIONS = 32;
const ROOT = fileURLToPath(new URL('..', import.meta.url));
const BASELINE = process.env.BENCH_BASELINE;
const SET = process.env.BENCH_SET ?? 'path';
const BUILT = process.env.BENCH_BUILT === '1';
const dir = mkdtempSync(join(tmpdir(), 'sluice-cost-bench-'));
const children: ChildProcess[] = [];

interface Variant {
  readonly name: string;
  /** The repository root the gateway runs from; undefined for the bare proxy. */
  readonly root: string | undefined;
  /** The `logging:` section. */
  readonly logging: string;
  /** More configuration (YAML lines); for the bare proxy, `fields`: it carries the gateway's header lines. */
  readonly more?: string;
}

const bare: Variant = { name: 'node proxy, no limiting', root: undefined, logging: '' };
const bareFields: Variant = {
  name: 'node proxy + the header lines',
  root: undefined,
  logging: '',
  more: 'fields',
};
const sets: Record<string, Variant[]> = {
  path: [
    ...(BASELINE === undefined
      ? []
      : [{ name: 'baseline, warn', root: BASELINE, logging: '{ level: warn }' }]),
    { name: 'this tree, warn', root: ROOT, logging: '{ level: warn }' },
    bare,
  ],
  log: [
    ...(BASELINE === undefined
      ? []
      : [
          { name: 'baseline, warn', root: BASELINE, logging: '{ level: warn }' },
          { name: 'baseline, info', root: BASELINE, logging: '{ level: info }' },
        ]),
    { name: 'this tree, info, requests none', root: ROOT, logging: '{ level: info, requests: none }' },
    { name: 'this tree, info, requests all', root: ROOT, logging: '{ level: info, requests: all }' },
    { name: 'this tree, info, requests 1%', root: ROOT, logging: '{ level: info, requests: 1% }' },
    bare,
  ],
  // The request line alone: one tree, the default `all` against `none`, so more rounds fit in the same time.
  lines: [
    { name: 'this tree, info, requests none', root: ROOT, logging: '{ level: info, requests: none }' },
    { name: 'this tree, info, requests all', root: ROOT, logging: '{ level: info, requests: all }' },
    bare,
  ],
  // The rate-limit header lines against a precomputed write of their bytes: the gateway with and without them,
  // the bare proxy with and without the same fields (and the request id and forwarding fields) as fixed strings.
  headers: [
    { name: 'this tree, warn, headers both', root: ROOT, logging: '{ level: warn }' },
    {
      name: 'this tree, warn, headers none',
      root: ROOT,
      logging: '{ level: warn }',
      more: 'headers: { mode: none }',
    },
    bareFields,
    bare,
  ],
};
const variants = sets[SET];
if (variants === undefined)
  throw new Error(`BENCH_SET must be one of ${Object.keys(sets).join(', ')}, got ${SET}`);

async function waitForPort(port: number): Promise<void> {
  for (let i = 0; i < 600; i++) {
    try {
      await fetch(`http://127.0.0.1:${port}/api/x`);
      return;
    } catch {
      await new Promise((r) => setTimeout(r, 50));
    }
  }
  throw new Error(`port ${port} did not open`);
}

function spawnPinned(cpus: string | undefined, args: string[], cwd: string, out: number | 'ignore') {
  const [cmd, argv] = pinned(cpus, process.execPath, args);
  const child = spawn(cmd, argv, { cwd, stdio: ['ignore', out, out] });
  children.push(child);
  return child;
}

async function main(): Promise<void> {
  const up = await freePort();
  spawnPinned(
    LOADGEN_CPUS,
    [
      '-e',
      `require('http').createServer((q,s)=>{s.writeHead(200,{'content-type':'text/plain','content-length':2});s.end('ok')}).listen(${up},'127.0.0.1')`,
    ],
    ROOT,
    'ignore',
  );
  await waitForPort(up);
  const targets: { v: Variant; url: string; pid: number | undefined; log: string | undefined }[] = [];
  // Gateways first: the bare proxy with the header lines takes them from a gateway's answer.
  const order = [...variants.entries()].sort(
    ([, a], [, b]) => Number(a.root === undefined) - Number(b.root === undefined),
  );
  for (const [i, v] of order) {
    const port = await freePort();
    if (v.root === undefined) {
      const fields = v.more === 'fields' ? [await rateLimitFields(targets[0]?.url)] : [];
      const child = spawnPinned(
        SERVER_CPUS,
        [
          '--import',
          'tsx',
          join(ROOT, 'bench/gateway/bare-proxy.ts'),
          `http://127.0.0.1:${up}`,
          String(port),
          ...fields,
        ],
        ROOT,
        'ignore',
      );
      await waitForPort(port);
      targets.push({ v, url: `http://127.0.0.1:${port}/api/x`, pid: child.pid, log: undefined });
      continue;
    }
    const yaml = join(dir, `gw-${i}.yaml`);
    writeFileSync(
      yaml,
      `${BENCH_LIMITS_YAML}logging: ${v.logging}\nreload: { watch: false }\n${v.more === undefined ? '' : `${v.more}\n`}`,
    );
    const log = join(dir, `gw-${i}.log`);
    const fd = openSync(log, 'w');
    const child = spawnPinned(
      SERVER_CPUS,
      [
        ...(BUILT
          ? ['packages/gateway/dist/bin/sluice.js']
          : ['--import', 'tsx', 'packages/gateway/src/bin/sluice.ts']),
        'serve',
        '--config',
        yaml,
        '--upstream',
        `http://127.0.0.1:${up}`,
        '--port',
        String(port),
        '--threads',
        '1',
      ],
      v.root,
      fd,
    );
    closeSync(fd);
    await waitForPort(port);
    targets.push({ v, url: `http://127.0.0.1:${port}/api/x`, pid: child.pid, log });
  }
  // Rows in the set's order, whatever order they were started in.
  targets.sort((a, b) => variants.indexOf(a.v) - variants.indexOf(b.v));
  console.log(
    `${arrangement()}; set ${SET}; ${ROUNDS} rounds of ${SECONDS} s, ${CONNECTIONS} connections; gateways ${BUILT ? 'built (dist)' : 'from sources (tsx)'}`,
  );
  for (const t of targets) await runLoad({ url: t.url, connections: CONNECTIONS, seconds: 1 }); // warm-up
  const cpu: number[][] = targets.map(() => []);
  const rps: number[][] = targets.map(() => []);
  let failures = 0;
  for (let round = 0; round < ROUNDS; round++) {
    const order = round % 2 === 0 ? [...targets.keys()] : [...targets.keys()].reverse();
    for (const i of order) {
      const before = cpuSeconds(targets[i].pid) ?? 0;
      const r = await runLoad({ url: targets[i].url, connections: CONNECTIONS, seconds: SECONDS });
      const after = cpuSeconds(targets[i].pid) ?? 0;
      failures += r.errors + r.non2xx;
      cpu[i].push(((after - before) * 1e6) / r.total);
      rps[i].push(r.rps);
    }
  }
  const ref = targets.length - 1; // the bare proxy
  const spread = (v: number[], d = 1) =>
    `${median(v).toFixed(d)} (${Math.min(...v).toFixed(d)} to ${Math.max(...v).toFixed(d)})`;
  const rows = targets.map((t, i) => {
    const vsBare = cpu[i].map((c, r) => c / cpu[ref][r]);
    const vsFirst = cpu[i].map((c, r) => c / cpu[0][r]);
    const size = t.log === undefined ? '' : `${(statSync(t.log).size / 1e6).toFixed(1)} MB`;
    return [
      t.v.name,
      spread(rps[i].map((x) => x / 1000)),
      spread(cpu[i]),
      spread(vsBare, 3),
      spread(vsFirst, 3),
      size,
    ];
  });
  console.log(
    table(
      [
        'target',
        'k requests/s',
        'CPU us per request',
        'CPU / bare proxy (per round)',
        `CPU / ${targets[0].v.name} (per round)`,
        'log written',
      ],
      rows,
    ),
  );
  console.log(`errors and non-2xx: ${failures}`);
}

/** The rate-limit fields of one gateway answer, as the JSON argument of the bare proxy. */
async function rateLimitFields(url: string | undefined): Promise<string> {
  if (url === undefined) throw new Error('the bare proxy with the header lines needs a gateway in the set');
  // node:http, not fetch: the names as the gateway spells them, so the bare proxy writes the same bytes.
  const raw = await new Promise<string[]>((resolve, reject) => {
    get(url, (res) => {
      res.resume();
      res.on('end', () => resolve(res.rawHeaders));
    }).on('error', reject);
  });
  const fields: Record<string, string> = {};
  for (let i = 0; i < raw.length; i += 2) if (/^(x-)?ratelimit/i.test(raw[i])) fields[raw[i]] = raw[i + 1];
  return JSON.stringify(fields);
}

main()
  .catch((e) => {
    console.error(e);
    process.exitCode = 1;
  })
  .finally(() => {
    for (const c of children) c.kill('SIGKILL');
    rmSync(dir, { recursive: true, force: true });
  });
