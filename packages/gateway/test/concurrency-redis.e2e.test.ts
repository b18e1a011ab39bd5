/**
 * Concurrency limits on the Redis store, end to end: two `sluice serve` processes on one redis-server share one
 * count per client, and the slots of a gateway killed while holding them come back within `store.leaseTime`.
 */
import type { ChildProcess } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { connect } from 'node:net';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type RedisServer, startRedisServer } from '../../../test/support/redis-server.js';
import { compiledSluice } from './compiled-sluice.js';
import {
  type SpawnedSluice,
  serveArgs,
  spawnSluice,
  startUpstream,
  type TestUpstream,
  tempDir,
} from './support.js';

const N = 3;
const KEYS = 4;
const CLIENTS = 200;
const LEASE_MS = 1_000;
const tmp = tempDir();
const spawned: ChildProcess[] = [];
let upstream: TestUpstream;
let redis: RedisServer;
/** The command compiled from the sources once: each `sluice` started below starts faster than through tsx. */
let compiled: Awaited<ReturnType<typeof compiledSluice>>;

beforeAll(async () => {
  [upstream, redis, compiled] = await Promise.all([startUpstream(), startRedisServer(), compiledSluice()]);
});
afterAll(async () => {
  for (const c of spawned) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
  await Promise.allSettled([upstream.close(), redis.stop()]);
  compiled?.remove();
  tmp.cleanup();
});

/** A GET on a connection of its own, from client address 192.0.2.<k> (a trusted proxy's header); its status. */
function get(url: string, k: number, path = `/api/reports/${k}`): Promise<number> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve, reject) => {
    const socket = connect(Number(port), hostname, () =>
      socket.write(
        `GET ${path} HTTP/1.1\r\nhost: ${hostname}\r\nx-forwarded-for: 192.0.2.${k}\r\nconnection: close\r\n\r\n`,
      ),
    );
    let text = '';
    socket.setEncoding('utf8');
    socket.on('data', (c: string) => {
      text += c;
    });
    socket.on('end', () => resolve(Number(text.slice(9, 12))));
    socket.on('error', reject);
  });
}

/** Starts one gateway on the shared Redis; resolves with it and its URL once it listens. */
async function gateway(name: string): Promise<{ p: SpawnedSluice; url: string }> {
  const file = join(tmp.dir, `${name}.yaml`);
  writeFileSync(
    file,
    'rateLimiting:\n  defaultTier: t\n  tiers:\n    t: { requestsPerMinute: 60000, burstLimit: 10000 }\n' +
      `  endpoints:\n    - { pattern: "/api/reports/*", name: reports, concurrent: ${N} }\n` +
      'server: { port: 1, trustedProxies: [loopback] }\nupstream: { url: "http://127.0.0.1:1" }\n' +
      `store: { type: redis, url: "${redis.url}", failureMode: closed, timeout: 2s, leaseTime: ${LEASE_MS}ms }\n`,
  );
  const p = spawnSluice(process.execPath, serveArgs(file, upstream.url, 1), spawned, compiled.bin);
  const { url } = JSON.parse(await p.waitFor(/sluice gateway listening/)) as { url: string };
  return { p, url };
}

describe('concurrency limits on the Redis store, across gateways', () => {
  it('two gateways, 200 concurrent clients over 4 keys: never more than N in flight per key at the upstream', async () => {
    const inFlight = new Array<number>(KEYS).fill(0);
    const most = new Array<number>(KEYS).fill(0);
    // Holds every request 200 ms, counting what it holds per client key (the last path segment).
    upstream.handler = (req: IncomingMessage, res: ServerResponse) => {
      const k = Number(req.url?.split('/').pop());
      inFlight[k]++;
      most[k] = Math.max(most[k], inFlight[k]);
      res.on('close', () => inFlight[k]--);
      req.resume();
      setTimeout(() => res.end('done'), 200);
    };
    const [a, b] = await Promise.all([gateway('a'), gateway('b')]);
    const answers = await Promise.all(
      Array.from({ length: CLIENTS }, (_, i) => get(i % 2 === 0 ? a.url : b.url, i % KEYS)),
    );
    expect(new Set(answers)).toEqual(new Set([200, 429]));
    for (let k = 0; k < KEYS; k++) {
      expect(most[k]).toBeLessThanOrEqual(N);
      expect(most[k]).toBeGreaterThan(0);
    }
    expect(Math.max(...most)).toBe(N);
    // Every slot came back: N more per key are admitted, through either gateway.
    const again = await Promise.all(
      Array.from({ length: N * KEYS }, (_, i) => get(i % 2 === 0 ? a.url : b.url, i % KEYS)),
    );
    expect(again).toEqual(Array(N * KEYS).fill(200));
    for (const g of [a, b]) g.p.child.kill('SIGTERM');
    expect(await Promise.all([a.p.exited, b.p.exited])).toEqual([0, 0]);
  }, 90_000);

  it("a gateway killed with slots held: the other admits again once the killed one's lease ends", async () => {
    const held: ServerResponse[] = [];
    // Holds the requests of the killed gateway; answers the others at once.
    upstream.handler = (req: IncomingMessage, res: ServerResponse) => {
      req.resume();
      if (req.url === '/api/reports/held') held.push(res);
      else res.end('done');
    };
    const [a, b] = await Promise.all([gateway('a2'), gateway('b2')]);
    const k = 1;
    const taken = Array.from({ length: N }, () => get(a.url, k, `/api/reports/held`).catch(() => 0));
    while (held.length < N) await new Promise((r) => setTimeout(r, 20));
    expect(await get(b.url, k, '/api/reports/refused')).toBe(429);
    a.p.child.kill('SIGKILL');
    const killedAt = Date.now();
    await a.p.exited;
    await Promise.all(taken);
    // The killed gateway released nothing: its slots count until its lease ends, then b admits again.
    let status = await get(b.url, k, '/api/reports/after');
    while (status === 429) {
      expect(Date.now() - killedAt).toBeLessThan(LEASE_MS * 5);
      await new Promise((r) => setTimeout(r, 50));
      status = await get(b.url, k, '/api/reports/after');
    }
    const back = Date.now() - killedAt;
    expect(status).toBe(200);
    // Within the lease (its last renewal came before the kill), plus a loaded machine's scheduling slack.
    expect(back).toBeLessThan(LEASE_MS + 1_500);
    for (const res of held.splice(0)) res.end('done');
    b.p.child.kill('SIGTERM');
    expect(await b.p.exited).toBe(0);
  }, 90_000);
});
