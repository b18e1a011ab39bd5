import type { ChildProcess } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type RedisServer, startRedisServer } from '../../../test/support/redis-server.js';
import { compiledSluice } from './compiled-sluice.js';
import { atOnce } from './own-connections.js';
import { serveArgs, spawnSluice, startUpstream, type TestUpstream, tempDir } from './support.js';

const tmp = tempDir();
const spawned: ChildProcess[] = [];
let upstream: TestUpstream;
let redis: RedisServer;
/** The command compiled from the sources once: each `sluice` started below starts faster than through tsx. */
let compiled: Awaited<ReturnType<typeof compiledSluice>>;

/** The tier's hour bucket holds 5 and regains one every 720 s: no test run sees a refill. */
const BURST = 5;
const CONFIG =
  'rateLimiting:\n  defaultTier: t\n' +
  `  tiers:\n    t: { requestsPerMinute: 1, requestsPerHour: ${BURST}, burstLimit: ${BURST} }\n` +
  'server: { port: 1 }\nupstream: { url: "http://127.0.0.1:1" }\n';

beforeAll(async () => {
  [upstream, redis, compiled] = await Promise.all([startUpstream(), startRedisServer(), compiledSluice()]);
}, 60_000);
afterAll(async () => {
  // A failed assertion must not leave a server running.
  for (const c of spawned) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
  await Promise.all([upstream.close(), redis.stop()]);
  compiled?.remove();
  tmp.cleanup();
});

const count = (codes: number[]) => {
  const out: Record<number, number> = {};
  for (const c of codes) out[c] = (out[c] ?? 0) + 1;
  return out;
};

describe('sluice serve --threads 2 on Redis, idle through an outage', () => {
  for (const mode of ['closed', 'open'] as const) {
    it(`every thread is back on Redis without traffic: the next ${200} requests at once admit exactly ${BURST} (${mode})`, async () => {
      const file = join(tmp.dir, `idle-${mode}.yaml`);
      // No request reaches a thread from the kill until the burst: each thread must see Redis return on its own.
      // The timeout is one a two-core machine running a whole suite meets (the default 100 ms is exceeded there by
      // scheduling alone); the store's own suites pin each part: redis-store.reconnect.test.ts, batch-queue.test.ts.
      writeFileSync(
        file,
        `${CONFIG}store: { type: redis, url: "${redis.url}", failureMode: ${mode}, timeout: 1s }\n` +
          `keys: { prefix: "idle-${mode}:" }\n`,
      );
      const p = spawnSluice(process.execPath, serveArgs(file, upstream.url, 2), spawned, compiled.bin);
      const first = JSON.parse(await p.waitFor(/sluice gateway listening/)) as { url: string };
      await p.waitFor(/sluice gateway listening on every thread/);
      try {
        await redis.kill();
        await new Promise((r) => setTimeout(r, 2000));
        await redis.restart();
        await new Promise((r) => setTimeout(r, 3000));
        const codes = await atOnce(`${first.url}/x`, 200);
        expect(count(codes)).toEqual({ 200: BURST, 429: 200 - BURST });
      } finally {
        if (!redis.running) await redis.restart();
        p.child.kill('SIGTERM');
        await p.exited;
      }
    }, 60_000);
  }
});
