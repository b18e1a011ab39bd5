import { writeFileSync } from 'node:fs';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { freePort } from '../../../test/support/redis-server.js';
import { rawGet } from './own-connections.js';
import { spawnSuite } from './spawn-suite.js';
import { client, type SpawnedSluice, send, serveArgs, spawnSluice } from './support.js';

/** Requests sent at once, each on a connection of its own: the kernel spreads them over both threads. */
const CLIENTS = 16;
const TOKEN = 'c'.repeat(32);
const suite = spawnSuite();
const { tmp, spawned } = suite;

/** Asks `read` again until `ok` holds of its answer or 20 s pass; returns the last answer. */
async function until<T>(read: () => Promise<T>, ok: (v: T) => boolean): Promise<T> {
  const deadline = Date.now() + 20_000;
  for (;;) {
    const v = await read();
    if (ok(v) || Date.now() > deadline) return v;
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** The threads that wrote a request line. */
const threadsServing = (p: SpawnedSluice) =>
  new Set(
    p.lines
      .filter((l) => l.startsWith('{') && l.includes('"msg":"request"'))
      .map((l) => (JSON.parse(l) as { thread?: number }).thread),
  );

interface DashboardState {
  readonly status: {
    readonly capacity?: { readonly concurrency: readonly { policy: string; inFlight: number }[] };
    readonly units?: readonly { policy: string; unit: string; units: number }[];
  };
}

/** `sluice serve --threads 2` with an admin listener; resolves with its proxy URL and a reader of its dashboard. */
async function serve(name: string, yaml: string) {
  const adminPort = await freePort();
  const file = join(tmp.dir, name);
  writeFileSync(
    file,
    `${yaml}admin: { port: ${adminPort}, token: "${TOKEN}" }\n` +
      'server: { port: 1 }\nupstream: { url: "http://127.0.0.1:1" }\n',
  );
  const p = spawnSluice(process.execPath, serveArgs(file, suite.upstream.url, 2), spawned, suite.bin);
  const { url } = JSON.parse(await p.waitFor(/sluice gateway listening/)) as { url: string };
  await p.waitFor(/"thread":1.*sluice gateway listening/);
  const admin = client();
  const state = async (): Promise<DashboardState> => {
    const r = await send(admin, `http://127.0.0.1:${adminPort}/dashboard/state`, {
      headers: { authorization: `Bearer ${TOKEN}` },
    });
    expect(r.status, r.text).toBe(200);
    return r.json() as DashboardState;
  };
  const stop = async () => {
    await admin.close();
    p.child.kill('SIGTERM');
    expect(await p.exited).toBe(0);
  };
  return { p, url, state, stop };
}

describe('the dashboard of sluice serve --threads 2 shows the whole process', () => {
  it("the capacity panel's requests in flight per policy are summed over the threads", async () => {
    const held: ServerResponse[] = [];
    suite.upstream.handler = (req: IncomingMessage, res: ServerResponse) => {
      req.resume();
      held.push(res);
    };
    const g = await serve(
      'threads-capacity.yaml',
      'rateLimiting:\n  defaultTier: t\n  tiers:\n    t: { requestsPerMinute: 60000, burstLimit: 10000 }\n' +
        '  endpoints:\n    - { pattern: "/api/reports/*", name: reports, concurrent: 50 }\n',
    );
    const all = Array.from({ length: CLIENTS }, () => rawGet(g.url, '/api/reports/q'));
    while (held.length < CLIENTS) await new Promise((r) => setTimeout(r, 20));
    const inFlight = (s: DashboardState) =>
      s.status.capacity?.concurrency.find((c) => c.policy === 'reports')?.inFlight;
    // The other thread's count arrives within a feed interval.
    const during = await until(g.state, (s) => inFlight(s) === CLIENTS);
    expect(inFlight(during)).toBe(CLIENTS);
    for (const res of held.splice(0)) res.end('done');
    expect(await Promise.all(all)).toEqual(Array(CLIENTS).fill(200));
    // Request lines come through the main thread's output a moment after the answers.
    expect(
      await until(
        async () => threadsServing(g.p),
        (t) => t.size === 2,
      ),
    ).toEqual(new Set([0, 1]));
    const after = await until(g.state, (s) => inFlight(s) === 0);
    expect(inFlight(after)).toBe(0);
    await g.stop();
  }, 60_000);

  it('the units charged card sums the threads', async () => {
    suite.upstream.handler = (req: IncomingMessage, res: ServerResponse) => {
      req.resume();
      res.writeHead(200, { 'x-upstream-cost': '3' });
      res.end('ok');
    };
    const g = await serve(
      'threads-units.yaml',
      'rateLimiting:\n  defaultTier: t\n  tiers:\n    t: { requestsPerMinute: 60000, burstLimit: 10000 }\n' +
        '  endpoints:\n    - pattern: /report/*\n      name: report-units\n      limit: 100000\n' +
        '      window: 60s\n      cost: { header: X-Upstream-Cost, fallback: 10 }\n',
    );
    expect(await Promise.all(Array.from({ length: CLIENTS }, () => rawGet(g.url, '/report/a')))).toEqual(
      Array(CLIENTS).fill(200),
    );
    // Request lines come through the main thread's output a moment after the answers.
    expect(
      await until(
        async () => threadsServing(g.p),
        (t) => t.size === 2,
      ),
    ).toEqual(new Set([0, 1]));
    const units = (s: DashboardState) => s.status.units?.find((u) => u.policy === 'report-units')?.units;
    const s = await until(g.state, (v) => units(v) === 3 * CLIENTS);
    expect(s.status.units).toEqual([{ policy: 'report-units', unit: 'units', units: 3 * CLIENTS }]);
    await g.stop();
  }, 60_000);
});
