import { type ChildProcess, spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { nodeLine } from '../../../scripts/node-line.mjs';
import { freePort, type RedisServer, startRedisServer } from '../../../test/support/redis-server.js';
import { main } from '../src/cli/main.js';
import {
  defaultThreads,
  THREADS_UNSUPPORTED_MESSAGE,
  threadsSupported,
} from '../src/gateway/threads-support.js';
import {
  client,
  send,
  serveArgs,
  spawnSluice,
  startUpstream,
  type TestUpstream,
  tempDir,
} from './support.js';

const tmp = tempDir();
const spawned: ChildProcess[] = [];
let upstream: TestUpstream;
let redis: RedisServer;

/** The tier's burst; its hour bucket holds as many and regains one every 720 s, so no test run sees a refill. */
const BURST = 5;
const EXTRA = 15;
const CONFIG =
  'rateLimiting:\n  defaultTier: t\n' +
  `  tiers:\n    t: { requestsPerMinute: 1, requestsPerHour: ${BURST}, burstLimit: ${BURST} }\n` +
  'server: { port: 1 }\nupstream: { url: "http://127.0.0.1:1" }\n';

beforeAll(async () => {
  [upstream, redis] = await Promise.all([startUpstream(), startRedisServer()]);
  threadedNode(); // installs Node.js 24 here (about 20 s, once per machine) rather than inside a test's timeout
}, 180_000);
afterAll(async () => {
  // A failed assertion must not leave a server running.
  for (const c of spawned) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
  await Promise.all([upstream.close(), redis.stop()]);
  tmp.cleanup();
});

/**
 * A Node.js binary with reusePort: this one when it has it, else Node.js 24 from the cache of
 * scripts/node-line.mjs, installed there from npm when missing (the same binary `npm run test:lines` uses).
 */
let threaded: string | undefined;
function threadedNode(): string {
  if (threadsSupported()) return process.execPath;
  if (threaded === undefined) threaded = join(nodeLine('24', { stdio: 'ignore' }), 'node');
  const v = spawnSync(threaded, ['-p', 'process.versions.node'], { encoding: 'utf8' }).stdout.trim();
  if (!threadsSupported(v)) throw new Error(`${threaded} is Node.js ${v}, without reusePort`);
  return threaded;
}

const spawnThreads = (node: string, args: string[]) => spawnSluice(node, args, spawned);

/** `sluice serve --threads 2` on a free port, in front of the test upstream. */
const serveTwoThreads = (node: string, file: string) => spawnThreads(node, serveArgs(file, upstream.url, 2));

/** Sends `n` requests, each on a connection of its own (so the kernel spreads them over the threads). */
async function burst(url: string, n: number, headers: Record<string, string> = {}): Promise<number[]> {
  const out: number[] = [];
  for (let i = 0; i < n; i += 5) {
    const batch = Array.from({ length: Math.min(5, n - i) }, async () => {
      const agent = client();
      try {
        return (await send(agent, `${url}/x`, { headers })).status;
      } finally {
        await agent.close();
      }
    });
    out.push(...(await Promise.all(batch)));
  }
  return out;
}

/** The value of every series of a metric in a Prometheus text. */
const seriesValues = (text: string, name: string) =>
  text
    .split('\n')
    .filter((l) => l.startsWith(`${name}{`) || l.startsWith(`${name} `))
    .map((l) => Number(l.slice(l.lastIndexOf(' ') + 1)));

/** Asks `read` again until `ok` holds of its answer or 20 s pass; returns the last answer. */
async function until<T>(read: () => Promise<T>, ok: (v: T) => boolean): Promise<T> {
  const deadline = Date.now() + 20_000;
  for (;;) {
    const v = await read();
    if (ok(v) || Date.now() > deadline) return v;
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** Allowed and limited requests of tier `t` over every second of a dashboard snapshot. */
function requestTotals(state: Record<string, unknown>): [number, number] {
  const series = state.series as { id: number; kind: string; tier: string }[];
  const id = series.find((x) => x.kind === 'requests' && x.tier === 't')?.id;
  const rows = state.rows as { v: Record<string, [number, number, number]> }[];
  const at = (c: number) => rows.reduce((n, r) => n + (id === undefined ? 0 : (r.v[id]?.[c] ?? 0)), 0);
  return [at(0), at(1)];
}

const requestLines = (lines: string[]) =>
  lines
    .filter((l) => l.startsWith('{'))
    .map((l) => JSON.parse(l) as { msg: string; thread?: number; status?: number })
    .filter((l) => l.msg === 'request');

describe('sluice serve --threads', () => {
  it('holds a block set through the admin API on every thread (the shared overrides buffer)', async () => {
    const file = join(tmp.dir, 'threads-block.yaml');
    const adminPort = await freePort();
    const token = 'b'.repeat(32);
    writeFileSync(file, `${CONFIG}admin: { port: ${adminPort}, token: "${token}" }\n`);
    const p = serveTwoThreads(threadedNode(), file);
    const first = JSON.parse(await p.waitFor(/sluice gateway listening/)) as { url: string };
    await p.waitFor(/"thread":1.*sluice gateway listening/);
    const admin = client();
    const set = await send(admin, `http://127.0.0.1:${adminPort}/overrides`, {
      method: 'PUT',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ pattern: 'ip:127.0.0.1', block: 403, reason: 'threads' }),
    });
    await admin.close();
    expect(set.status).toBe(200);
    const codes = await burst(first.url, 20);
    expect(codes).toEqual(Array(20).fill(403));
    await p.waitFor(/"msg":"request"/);
    const answered = requestLines(p.lines).filter((l) => l.status === 403);
    expect(new Set(answered.map((l) => l.thread))).toEqual(new Set([0, 1]));
    p.child.kill('SIGTERM');
    expect(await p.exited).toBe(0);
  });

  it('serves one port from two threads over one shared store: exactly the burst is admitted', async () => {
    const file = join(tmp.dir, 'threads.yaml');
    // A fixed admin port: a second thread opening it too would fail with EADDRINUSE.
    const adminPort = await freePort();
    writeFileSync(file, `${CONFIG}admin: { port: ${adminPort}, token: "${'t'.repeat(32)}" }\n`);
    const p = serveTwoThreads(threadedNode(), file);
    const first = JSON.parse(await p.waitFor(/sluice gateway listening/)) as { url: string };
    expect(first).toMatchObject({ thread: 0, admin: `http://127.0.0.1:${adminPort}` });
    await p.waitFor(/"thread":1.*sluice gateway listening/);
    const admin = client();
    const health = await send(admin, `http://127.0.0.1:${adminPort}/keys/ip:127.0.0.1`, {
      headers: { authorization: `Bearer ${'t'.repeat(32)}` },
    });
    await admin.close();
    expect(health.status).toBe(200);
    const codes = await burst(first.url, BURST + EXTRA);
    expect(codes.filter((c) => c === 200)).toHaveLength(BURST);
    expect(codes.filter((c) => c === 429)).toHaveLength(EXTRA);
    // Both threads answered some of the requests.
    await p.waitFor(/"msg":"request"/);
    const threads = new Set(requestLines(p.lines).map((l) => l.thread));
    expect(threads).toEqual(new Set([0, 1]));
    // /metrics answers for both threads, whichever one a connection lands on: in every scrape each of the tier's
    // two policies (both empty after the burst) counts every denial.
    const denied: number[][] = [];
    for (let i = 0; i < 6; i++) {
      const agent = client();
      const scrape = await send(agent, `${first.url}/metrics`);
      await agent.close();
      expect(scrape.status).toBe(200);
      denied.push(seriesValues(scrape.text, 'sluice_rate_limit_exceeded_total'));
    }
    expect(denied).toEqual(Array(6).fill([EXTRA, EXTRA]));
    // SIGHUP reaches every thread; SIGTERM drains them all.
    p.child.kill('SIGHUP');
    await p.waitFor(/"thread":0.*configuration reloaded|configuration reloaded.*"thread":0/);
    await p.waitFor(/"thread":1.*configuration reloaded|configuration reloaded.*"thread":1/);
    p.child.kill('SIGTERM');
    expect(await p.exited).toBe(0);
    expect(p.lines.filter((l) => l.includes('sluice gateway stopped'))).toHaveLength(2);
    expect(p.lines.some((l) => l.includes(THREADS_UNSUPPORTED_MESSAGE))).toBe(false);
  });

  it('the admin API and the dashboard of the first thread count every thread: top keys, rates, quota', async () => {
    const file = join(tmp.dir, 'threads-admin.yaml');
    const adminPort = await freePort();
    const token = 'a'.repeat(32);
    // The identity headers count from a trusted proxy only: this test is one, on loopback.
    writeFileSync(
      file,
      `${CONFIG.replace('server: { port: 1 }', 'server: { port: 1, trustedProxies: [loopback] }')}` +
        `admin: { port: ${adminPort}, token: "${token}" }\n` +
        'identity: { headers: {} }\n' +
        'quota:\n  tracking: { storage: memory, ttl: 3600, bucket: 60s, flushInterval: 100ms }\n',
    );
    const p = serveTwoThreads(threadedNode(), file);
    const first = JSON.parse(await p.waitFor(/sluice gateway listening/)) as { url: string };
    await p.waitFor(/"thread":1.*sluice gateway listening/);
    const codes = await burst(first.url, BURST + EXTRA, { 'x-tenant-id': 'acme', 'x-client-id': 'app' });
    expect(codes.filter((c) => c === 200)).toHaveLength(BURST);
    expect(new Set(requestLines(p.lines).map((l) => l.thread))).toEqual(new Set([0, 1]));
    const admin = client();
    const get = async (path: string) => {
      const r = await send(admin, `http://127.0.0.1:${adminPort}${path}`, {
        headers: { authorization: `Bearer ${token}` },
      });
      expect(r.status, r.text).toBe(200);
      return r.json() as Record<string, unknown>;
    };
    try {
      // The other thread's data arrives within a feed interval (and a flush for the quota): wait for it.
      // Each denial finds both of the tier's policies empty, and counts under each.
      const keys = await until(
        () => get('/limited-keys/top'),
        (b) => (b.keys as { count: number }[])[0]?.count === 2 * EXTRA,
      );
      expect(keys.keys).toMatchObject([{ count: 2 * EXTRA }]);
      const usage = await until(
        () => get('/quota/tenants/acme'),
        (b) => b.total === BURST,
      );
      expect(usage.total).toBe(BURST);
      const state = await until(
        () => get('/dashboard/state'),
        (b) => requestTotals(b).join() === `${BURST},${EXTRA}`,
      );
      expect(requestTotals(state)).toEqual([BURST, EXTRA]);
    } finally {
      await admin.close();
    }
    p.child.kill('SIGTERM');
    expect(await p.exited).toBe(0);
  });

  it('with Redis, each thread opens its own connection and Redis holds the limit over them', async () => {
    const file = join(tmp.dir, 'threads-redis.yaml');
    writeFileSync(file, `${CONFIG}store: { type: redis, url: "${redis.url}" }\n`);
    const p = serveTwoThreads(threadedNode(), file);
    const first = JSON.parse(await p.waitFor(/sluice gateway listening/)) as { url: string; store: string };
    expect(first.store).toBe('redis');
    await p.waitFor(/"thread":1.*sluice gateway listening/);
    const codes = await burst(first.url, BURST + EXTRA);
    expect(codes.filter((c) => c === 200)).toHaveLength(BURST);
    await p.waitFor(/"msg":"request"/);
    expect(new Set(requestLines(p.lines).map((l) => l.thread))).toEqual(new Set([0, 1]));
    p.child.kill('SIGTERM');
    expect(await p.exited).toBe(0);
  });

  it('on this Node.js: two threads where reusePort exists, else one thread and a message saying why', async () => {
    const file = join(tmp.dir, 'here.yaml');
    writeFileSync(file, CONFIG);
    const p = serveTwoThreads(process.execPath, file);
    const listening = JSON.parse(await p.waitFor(/sluice gateway listening/)) as { url: string };
    // Every thread must be up before the burst and the stop, as in the tests above.
    if (threadsSupported()) await p.waitFor(/"thread":1.*sluice gateway listening/);
    const codes = await burst(listening.url, BURST + 3);
    expect(codes.filter((c) => c === 200)).toHaveLength(BURST);
    p.child.kill('SIGTERM');
    expect(await p.exited).toBe(0);
    const stopped = p.lines.filter((l) => l.includes('sluice gateway stopped')).length;
    if (threadsSupported()) {
      expect(stopped).toBe(2);
    } else {
      expect(p.lines).toContain(`sluice: ${THREADS_UNSUPPORTED_MESSAGE}`);
      expect(stopped).toBe(1);
      expect(requestLines(p.lines).every((l) => l.thread === undefined)).toBe(true);
    }
  });

  it('without --threads, serves from one thread per core where reusePort exists', async () => {
    const file = join(tmp.dir, 'default.yaml');
    writeFileSync(file, CONFIG);
    const node = threadedNode();
    const cores = Number(
      spawnSync(node, ['-p', 'require("node:os").availableParallelism()'], { encoding: 'utf8' }).stdout,
    );
    const p = spawnThreads(node, ['serve', '--config', file, '--upstream', upstream.url, '--port', '0']);
    if (cores > 1) {
      const all = JSON.parse(await p.waitFor(/listening on every thread/)) as { threads: number };
      expect(all.threads).toBe(cores);
    } else await p.waitFor(/sluice gateway listening/);
    p.child.kill('SIGTERM');
    const stopped = await Promise.race([
      p.exited,
      new Promise((r) => setTimeout(() => r(`still running after 20 s:\n${p.lines.join('\n')}`), 20_000)),
    ]);
    expect(stopped).toBe(0);
    expect(p.lines.filter((l) => l.includes('sluice gateway stopped'))).toHaveLength(cores);
    expect(p.lines.some((l) => l.includes(THREADS_UNSUPPORTED_MESSAGE))).toBe(false);
  });

  it('defaults to the cores where threads are supported, else one thread without a message', () => {
    expect(defaultThreads(true, 8)).toBe(8);
    expect(defaultThreads(false, 8)).toBe(1);
    expect(defaultThreads(true, 0)).toBe(1);
  });

  it('rejects a thread count that is not an integer >= 1', async () => {
    const err: string[] = [];
    const io = { out: () => undefined, err: (t: string) => err.push(t), onSignal: () => () => undefined };
    for (const bad of ['0', '-1', '1.5', 'x']) {
      expect(await main(['serve', '--config', 'x.yaml', '--threads', bad], io)).toBe(2);
    }
    expect(err[0]).toMatch(/^sluice: --threads must be an integer >= 1, got "0"\n/);
  });

  it('knows where reusePort exists', () => {
    expect(threadsSupported('20.19.0', 'linux')).toBe(false);
    expect(threadsSupported('22.11.0', 'linux')).toBe(false);
    expect(threadsSupported('22.12.0', 'linux')).toBe(true);
    expect(threadsSupported('24.0.0', 'linux')).toBe(true);
    expect(threadsSupported('24.0.0', 'darwin')).toBe(false);
  });
});
