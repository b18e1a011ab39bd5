import { type ChildProcess, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
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
import { compiledSluice } from './compiled-sluice.js';
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
/** The command compiled from the sources: each test starts a gateway of two threads, which tsx makes slow. */
let compiled: Awaited<ReturnType<typeof compiledSluice>>;

/** The tier's burst; its hour bucket holds as many and regains one every 720 s, so no test run sees a refill. */
const BURST = 5;
const EXTRA = 15;
const CONFIG =
  'rateLimiting:\n  defaultTier: t\n' +
  `  tiers:\n    t: { requestsPerMinute: 1, requestsPerHour: ${BURST}, burstLimit: ${BURST} }\n` +
  'server: { port: 1 }\nupstream: { url: "http://127.0.0.1:1" }\n';

beforeAll(async () => {
  [upstream, redis, compiled] = await Promise.all([startUpstream(), startRedisServer(), compiledSluice()]);
  threadedNode(); // installs Node.js 24 here (about 20 s, once per machine) rather than inside a test's timeout
}, 180_000);
afterAll(async () => {
  // A failed assertion must not leave a server running.
  for (const c of spawned) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
  await Promise.all([upstream.close(), redis.stop()]);
  compiled?.remove();
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

const spawnThreads = (node: string, args: string[]) => spawnSluice(node, args, spawned, compiled.bin);

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

/** `n` GET requests of `url` at once, each on a connection of its own: their statuses and JSON bodies. */
function burstOf(url: string, n: number): Promise<{ status: number; body: unknown }[]> {
  return Promise.all(
    Array.from({ length: n }, async () => {
      const agent = client();
      try {
        const r = await send(agent, url);
        return { status: r.status, body: r.json() };
      } finally {
        await agent.close();
      }
    }),
  );
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
    .map((l) => JSON.parse(l) as { msg: string; thread?: number; status?: number; reqId?: string })
    .filter((l) => l.msg === 'request');

/** The threads that wrote a request line (with `status` when given), once both have: lines come in batches. */
const threadsLogging = (p: { lines: string[] }, status?: number) =>
  until(
    async () =>
      new Set(
        requestLines(p.lines)
          .filter((l) => status === undefined || l.status === status)
          .map((l) => l.thread),
      ),
    (s) => s.size >= 2,
  );

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
    expect(await threadsLogging(p, 403)).toEqual(new Set([0, 1]));
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
    expect(await threadsLogging(p)).toEqual(new Set([0, 1]));
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

  it('reads a reloaded file once on the main thread: one report of a bad file, one version on every thread', async () => {
    const file = join(tmp.dir, 'threads-one-read.yaml');
    writeFileSync(file, `${CONFIG}reload: { watch: false }\n`);
    const p = serveTwoThreads(threadedNode(), file);
    const first = JSON.parse(await p.waitFor(/sluice gateway listening/)) as { url: string };
    await p.waitFor(/listening on every thread/);
    // A bad file is reported once, by the main thread, and no thread drops what it serves.
    writeFileSync(file, `${CONFIG}reload: { watch: false }\nserver: { port: -1 }\n`);
    p.child.kill('SIGHUP');
    await p.waitFor(/configuration reload rejected/);
    // A good file is read once and handed to every thread: each runs that text's version.
    const next = `${CONFIG.replaceAll(`${BURST}`, '8')}reload: { watch: false }\n`;
    writeFileSync(file, next);
    p.child.kill('SIGHUP');
    const read = JSON.parse(await p.waitFor(/configuration read for every thread/)) as { version: string };
    const version = createHash('sha256').update(next).digest('hex').slice(0, 12);
    expect(read.version).toBe(version);
    const reloaded = await Promise.all(
      [0, 1].map((i) =>
        p.waitFor(new RegExp(`"thread":${i}.*configuration reloaded|configuration reloaded.*"thread":${i}`)),
      ),
    );
    expect(reloaded.map((l) => (JSON.parse(l) as { version?: string }).version)).toEqual([version, version]);
    // Counted once every thread logged the next reload: a thread that had read the bad file itself would have
    // logged its rejection before, since each thread logs in order.
    const rejected = p.lines.filter((l) => l.includes('configuration reload rejected'));
    expect(rejected).toHaveLength(1);
    expect(JSON.parse(rejected[0] ?? '{}')).not.toHaveProperty('thread');
    expect((await burst(first.url, 8 + EXTRA)).filter((c) => c === 200)).toHaveLength(8);
    p.child.kill('SIGTERM');
    expect(await p.exited).toBe(0);
  });

  it('watches the file on the main thread only, and hands a saved file to every thread', async () => {
    const file = join(tmp.dir, 'threads-watch.yaml');
    writeFileSync(file, CONFIG);
    const p = serveTwoThreads(threadedNode(), file);
    await p.waitFor(/listening on every thread/);
    const next = CONFIG.replaceAll(`${BURST}`, '9');
    writeFileSync(file, next);
    const version = createHash('sha256').update(next).digest('hex').slice(0, 12);
    for (const i of [0, 1])
      await p.waitFor(new RegExp(`"thread":${i}.*"version":"${version}".*configuration reloaded`));
    await new Promise((r) => setTimeout(r, 500));
    // One read (the main thread's), however many threads.
    expect(p.lines.filter((l) => l.includes('configuration read for every thread'))).toHaveLength(1);
    p.child.kill('SIGTERM');
    expect(await p.exited).toBe(0);
  });

  it('answers /ready 503 "starting" until every thread listens, then 200 from each', async () => {
    const file = join(tmp.dir, 'threads-ready.yaml');
    writeFileSync(file, CONFIG);
    const port = await freePort();
    const args = serveArgs(file, upstream.url, 2);
    args[args.indexOf('--port') + 1] = String(port);
    const p = spawnThreads(threadedNode(), args);
    // The first thread logs this before the main thread even starts the second one.
    await p.waitFor(/"thread":0.*sluice gateway listening/);
    const early = await burstOf(`http://127.0.0.1:${port}/ready`, 1);
    expect(early).toEqual([{ status: 503, body: { status: 'starting' } }]);
    await p.waitFor(/listening on every thread/);
    // Each on a connection of its own, so that both threads answer some.
    const ready = await burstOf(`http://127.0.0.1:${port}/ready`, 10);
    expect(ready.map((r) => r.status)).toEqual(Array(10).fill(200));
    expect(ready[0]?.body).toMatchObject({ status: 'ready' });
    p.child.kill('SIGTERM');
    expect(await p.exited).toBe(0);
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
    expect(await threadsLogging(p)).toEqual(new Set([0, 1]));
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

  it("the dashboard's top limited keys say who each key is, whichever thread limited it", async () => {
    const file = join(tmp.dir, 'threads-facts.yaml');
    const adminPort = await freePort();
    const token = 'f'.repeat(32);
    writeFileSync(
      file,
      `${CONFIG.replace('server: { port: 1 }', 'server: { port: 1, trustedProxies: [loopback] }')}` +
        `admin: { port: ${adminPort}, token: "${token}" }\nidentity: { headers: {} }\n`,
    );
    const p = serveTwoThreads(threadedNode(), file);
    const first = JSON.parse(await p.waitFor(/sluice gateway listening/)) as { url: string };
    await p.waitFor(/"thread":1.*sluice gateway listening/);
    // Ten clients, each denied twice, on connections of their own: the kernel spreads them over both threads,
    // so some clients are most likely limited by the second thread alone.
    const clients = Array.from({ length: 10 }, (_, i) => `c${i}`);
    for (const c of clients) await burst(first.url, BURST + 2, { 'x-tenant-id': 'acme', 'x-client-id': c });
    const admin = client();
    try {
      const state = await until(
        async () =>
          (
            await send(admin, `http://127.0.0.1:${adminPort}/dashboard/state`, {
              headers: { authorization: `Bearer ${token}` },
            })
          ).json() as { status: { topLimitedKeys: { items?: { key?: string }[] } } },
        (s) =>
          (s.status.topLimitedKeys.items ?? []).filter((k) => k.key !== undefined).length === clients.length,
      );
      const keys = (state.status.topLimitedKeys.items ?? []).map((k) => k.key);
      expect(keys.sort()).toEqual(clients.map((c) => `tenant:acme:client:${c}`).sort());
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
    expect(await threadsLogging(p)).toEqual(new Set([0, 1]));
    p.child.kill('SIGTERM');
    expect(await p.exited).toBe(0);
  });

  it('with Redis, an admin reset reaches every thread before it answers: no thread denies from an old answer', async () => {
    const file = join(tmp.dir, 'threads-reset.yaml');
    const adminPort = await freePort();
    const token = 'r'.repeat(32);
    // A burst of 10: the first 10 requests after the reset must all pass, whichever thread each lands on.
    writeFileSync(
      file,
      `${CONFIG.replace(`requestsPerHour: ${BURST}, burstLimit: ${BURST}`, 'requestsPerHour: 10, burstLimit: 10')}` +
        `store: { type: redis, url: "${redis.url}" }\nkeys: { prefix: "threads-reset:" }\n` +
        `admin: { port: ${adminPort}, token: "${token}" }
`,
    );
    const p = serveTwoThreads(threadedNode(), file);
    const first = JSON.parse(await p.waitFor(/sluice gateway listening/)) as { url: string };
    await p.waitFor(/"thread":1.*sluice gateway listening/);
    // Exhaust the key until each thread has had a denial from Redis (which its deny cache keeps for 6 minutes).
    const deniedBy = () =>
      new Set(requestLines(p.lines).flatMap((l) => (l.status === 429 ? [l.thread] : [])));
    const exhausted = await until(
      async () => {
        await burst(first.url, 10);
        return deniedBy();
      },
      (threads) => threads.size === 2,
    );
    expect(exhausted).toEqual(new Set([0, 1]));
    const admin = client();
    const reset = await send(admin, `http://127.0.0.1:${adminPort}/keys/ip%3A127.0.0.1`, {
      method: 'DELETE',
      headers: { authorization: `Bearer ${token}` },
    });
    await admin.close();
    expect(reset.status).toBe(204);
    // Tagged: lines of the bursts before the reset may still be written after it (lines go out in batches).
    const codes = await burst(first.url, 10, { 'x-request-id': 'after-reset' });
    expect(codes).toEqual(Array(10).fill(200));
    const afterReset = () => requestLines(p.lines).filter((l) => l.reqId === 'after-reset');
    // Both threads answered some of them (each on a connection of its own; all on one is a 1 in 512 chance).
    await until(
      async () => afterReset().length,
      (n) => n === 10,
    );
    expect(new Set(afterReset().map((l) => l.thread))).toEqual(new Set([0, 1]));
    p.child.kill('SIGTERM');
    expect(await p.exited).toBe(0);
  });

  it('with Redis, a reload that changes a limit starts it full on every thread', async () => {
    const file = join(tmp.dir, 'threads-reload.yaml');
    const store = `store: { type: redis, url: "${redis.url}" }\nkeys: { prefix: "threads-reload:" }\n`;
    writeFileSync(file, `${CONFIG}${store}`);
    const p = serveTwoThreads(threadedNode(), file);
    const first = JSON.parse(await p.waitFor(/sluice gateway listening/)) as { url: string };
    await p.waitFor(/"thread":1.*sluice gateway listening/);
    expect((await burst(first.url, BURST + EXTRA)).filter((c) => c === 200)).toHaveLength(BURST);
    writeFileSync(file, `${CONFIG.replaceAll(`${BURST}`, '8')}${store}`);
    p.child.kill('SIGHUP');
    await p.waitFor(/"thread":0.*configuration reloaded|configuration reloaded.*"thread":0/);
    await p.waitFor(/"thread":1.*configuration reloaded|configuration reloaded.*"thread":1/);
    expect((await burst(first.url, 8 + EXTRA)).filter((c) => c === 200)).toHaveLength(8);
    p.child.kill('SIGTERM');
    expect(await p.exited).toBe(0);
  });

  it('with Redis, both threads leave the failure mode without traffic and the next concurrent burst is exact', async () => {
    const file = join(tmp.dir, 'threads-recover.yaml');
    // A timeout generous for a busy machine: a Redis call of the burst below that timed out would count as a
    // failure and could switch a thread back to its failure mode (the dead server refuses connections at once).
    writeFileSync(
      file,
      `${CONFIG}store: { type: redis, url: "${redis.url}", failureMode: open, timeout: 2s }\n` +
        'keys: { prefix: "threads-recover:" }\n',
    );
    const p = serveTwoThreads(threadedNode(), file);
    const first = JSON.parse(await p.waitFor(/sluice gateway listening/)) as { url: string };
    await p.waitFor(/"thread":1.*sluice gateway listening/);
    const active = async () => {
      const agent = client();
      try {
        const text = (await send(agent, `${first.url}/metrics`)).text;
        return seriesValues(text, 'sluice_store_failure_mode_active');
      } finally {
        await agent.close();
      }
    };
    try {
      await redis.kill();
      // Open mode admits; each thread switches after its third failed call, and logs it: wait for both, so that
      // the gauge (the largest of the two threads) reads 0 below only once both are back.
      const switched = () =>
        new Set(
          p.lines
            .filter((l) => l.includes('rate limit store unavailable'))
            .map((l) => (JSON.parse(l) as { thread: number }).thread),
        );
      await until(
        async () => {
          await burst(first.url, 10);
          return switched();
        },
        (threads) => threads.size === 2,
      );
      expect(switched()).toEqual(new Set([0, 1]));
      expect(await active()).toEqual([1]);
      await redis.restart();
      // No request through the proxy from here until the gauge reads 0 on both threads.
      expect(await until(active, (v) => v[0] === 0)).toEqual([0]);
      const ready = client();
      expect((await send(ready, `${first.url}/ready`)).status).toBe(200);
      await ready.close();
      const codes = await Promise.all(
        Array.from({ length: 200 }, async () => {
          const agent = client();
          try {
            return (await send(agent, `${first.url}/x`)).status;
          } finally {
            await agent.close();
          }
        }),
      );
      expect(codes.filter((c) => c === 200)).toHaveLength(BURST);
    } finally {
      if (!redis.running) await redis.restart();
    }
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
    // nodeCount x threads stays within the Redis store's divisor bound.
    expect(defaultThreads(true, 256)).toBe(100);
  });

  it('rejects a thread count that is not an integer from 1 to 100', async () => {
    const err: string[] = [];
    const io = { out: () => undefined, err: (t: string) => err.push(t), onSignal: () => () => undefined };
    for (const bad of ['0', '-1', '1.5', 'x', '101']) {
      expect(await main(['serve', '--config', 'x.yaml', '--threads', bad], io)).toBe(2);
    }
    expect(err[0]).toMatch(/^sluice: --threads must be an integer from 1 to 100, got "0"\n/);
  });

  it('knows where reusePort exists', () => {
    expect(threadsSupported('20.19.0', 'linux')).toBe(false);
    expect(threadsSupported('22.11.0', 'linux')).toBe(false);
    expect(threadsSupported('22.12.0', 'linux')).toBe(true);
    expect(threadsSupported('24.0.0', 'linux')).toBe(true);
    expect(threadsSupported('24.0.0', 'darwin')).toBe(false);
  });
});
