/**
 * Time to first byte through the gateway with a cost settled from the response, against the same stream without
 * one, in the same run: one gateway (memory store, `logging: warn`), one upstream that streams server-sent events
 * (its first event at once, the usage event 20 ms later), and requests alternating between a route that settles
 * `usage.total_tokens` with a reservation and one that settles nothing. Each round sends BENCH_REQUESTS requests
 * per route, one at a time; the figure is each round's median time to first byte per route and their ratio, and
 * the table gives the median over rounds with the spread (lowest and highest).
 *
 *   npx tsx bench/settle-ttfb.bench.ts
 *   BENCH_ROUNDS=8 BENCH_REQUESTS=200 npx tsx bench/settle-ttfb.bench.ts
 */

import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Agent, request } from 'undici';
import { loadConfigFile } from '../packages/gateway/src/config/load-config.js';
import { Gateway } from '../packages/gateway/src/gateway/gateway.js';
import { createLogger } from '../packages/gateway/src/log/create-logger.js';
import { median, table } from './lib/stats.js';

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 6);
const REQUESTS = Number(process.env.BENCH_REQUESTS ?? 150);

const upstream = createServer((req, res) => {
  req.resume();
  res.writeHead(200, { 'content-type': 'text/event-stream' });
  res.write('data: {"choices":[{"delta":{"content":"Hel"}}],"usage":null}\n\n');
  setTimeout(() => {
    res.end('data: {"choices":[],"usage":{"total_tokens":42}}\n\ndata: [DONE]\n\n');
  }, 20);
});
await new Promise<void>((r) => upstream.listen(0, '127.0.0.1', r));
const upstreamUrl = `http://127.0.0.1:${(upstream.address() as AddressInfo).port}`;

const dir = mkdtempSync(join(tmpdir(), 'sluice-ttfb-'));
const file = join(dir, 'ttfb.yaml');
writeFileSync(
  file,
  `rateLimiting:
  defaultTier: free
  tiers:
    free: { requestsPerMinute: 100000000, burstLimit: 100000000 }
  endpoints:
    - pattern: /settled/*
      name: tokens
      limit: 100000000
      window: 60s
      cost: { json: usage.total_tokens, reserve: 100 }
    - pattern: /unreserved/*
      name: unreserved
      limit: 100000000
      window: 60s
      cost: { json: usage.total_tokens }
    - pattern: /counted/*
      name: counted
      limit: 100000000
      window: 60s
      count: successful
    - pattern: /plain/*
      name: requests
      limit: 100000000
      window: 60s
upstream:
  url: ${upstreamUrl}
logging: { level: warn }
`,
);
const loaded = loadConfigFile(file, { overrides: { port: 0, host: '127.0.0.1' } });
if (!loaded.ok) throw new Error(JSON.stringify(loaded.violations));
const gateway = await Gateway.start({
  config: loaded.config,
  configFile: file,
  overrides: { port: 0, host: '127.0.0.1' },
  logger: createLogger('warn'),
  watch: false,
});
const agent = new Agent({ keepAliveTimeout: 10_000, connections: 1 });

/** Milliseconds from sending the request to its first body byte; the rest is read and dropped. */
async function ttfb(path: string): Promise<number> {
  const t0 = performance.now();
  const r = await request(`${gateway.url}${path}`, { dispatcher: agent });
  let first = 0;
  for await (const _ of r.body) {
    if (first === 0) first = performance.now() - t0;
  }
  return first;
}

const ROUTES: [string, string][] = [
  ['/settled/x', 'json usage settled, reserve 100'],
  ['/unreserved/x', 'json usage settled, no reservation'],
  ['/counted/x', 'count: successful (an observer, no body read)'],
  ['/plain/x', 'nothing settled'],
];
// Warm up every path.
for (let i = 0; i < 50; i++) for (const [path] of ROUTES) await ttfb(path);
const perRound: number[][] = ROUTES.map(() => []);
const ratios: number[][] = ROUTES.map(() => []);
for (let round = 0; round < ROUNDS; round++) {
  const times: number[][] = ROUTES.map(() => []);
  for (let i = 0; i < REQUESTS; i++) {
    // The order turns each time, so no route always goes first.
    for (let k = 0; k < ROUTES.length; k++) {
      const j = (k + i + round) % ROUTES.length;
      times[j].push(await ttfb(ROUTES[j][0]));
    }
  }
  const plain = median(times[ROUTES.length - 1]);
  times.forEach((t, j) => {
    perRound[j].push(median(t));
    ratios[j].push(median(t) / plain);
  });
}
const spread = (xs: number[], digits: number) =>
  `${median(xs).toFixed(digits)} (${Math.min(...xs).toFixed(digits)} to ${Math.max(...xs).toFixed(digits)})`;
console.log(
  table(
    ['route', 'median time to first byte, ms (spread over rounds)', 'ratio to nothing settled, per round'],
    ROUTES.map(([, name], j) => [name, spread(perRound[j], 3), spread(ratios[j], 3)]),
  ),
);
console.log(
  `\n${ROUNDS} rounds of ${REQUESTS} requests per route, one at a time, keep-alive, same process and run.`,
);
await agent.close();
await gateway.close();
upstream.close();
rmSync(dir, { recursive: true, force: true });
