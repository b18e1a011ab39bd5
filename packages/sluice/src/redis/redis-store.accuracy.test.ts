import { type ChildProcessByStdio, spawn } from 'node:child_process';
import type { Readable, Writable } from 'node:stream';
import { fileURLToPath } from 'node:url';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type RedisServer, startRedisServer } from '../../../../test/support/redis-server.js';
import { definePolicy } from '../core/index.js';
import { RedisStore } from './index.js';

const WORKER = fileURLToPath(new URL('../../../../test/support/redis-hammer-worker.ts', import.meta.url));
// 10 tokens per second, burst 10: slow enough that a few ms of process jitter are a fraction of a token.
const QUOTA = 10;
const WINDOW = 1;
const BURST = 10;
const policy = definePolicy({ name: 'rl.accuracy', quota: QUOTA, window: WINDOW, burst: BURST });

let server: RedisServer;
let redis: Redis;
beforeAll(async () => {
  server = await startRedisServer();
  redis = new Redis({ host: server.host, port: server.port });
});
afterAll(async () => {
  await redis?.quit();
  await server?.stop();
});

function lines(child: ChildProcessByStdio<Writable, Readable, null>): AsyncIterator<string> {
  let buffer = '';
  const queue: string[] = [];
  let wake: (() => void) | undefined;
  child.stdout.on('data', (chunk: Buffer) => {
    buffer += chunk.toString();
    for (let i = buffer.indexOf('\n'); i >= 0; i = buffer.indexOf('\n')) {
      queue.push(buffer.slice(0, i));
      buffer = buffer.slice(i + 1);
    }
    wake?.();
  });
  child.on('exit', () => wake?.());
  return {
    async next() {
      while (queue.length === 0 && child.exitCode === null) await new Promise<void>((r) => (wake = r));
      const value = queue.shift();
      return value === undefined ? { done: true, value: undefined } : { done: false, value };
    },
  };
}

describe('RedisStore accuracy across processes', () => {
  it('four Node processes hammering one key admit burst + rate x elapsed, never more, at most one less', async () => {
    const key = `hammer-${Date.now()}`;
    const children = Array.from({ length: 4 }, () =>
      spawn(
        process.execPath,
        [
          '--import',
          'tsx',
          WORKER,
          String(server.port),
          key,
          '1500',
          '4',
          String(QUOTA),
          String(WINDOW),
          String(BURST),
        ],
        { stdio: ['pipe', 'pipe', 'inherit'] },
      ),
    );
    const outputs = children.map(lines);
    try {
      for (const out of outputs) expect((await out.next()).value).toBe('ready');
      // The test takes the first token itself, so the bucket's creation time is known exactly from Redis.
      const store = new RedisStore({ client: redis, timeoutMs: 5_000 });
      expect((await store.decide([{ policy, key }], 1)).allowed).toBe(true);
      const [, first] = (await redis.get(store.keyOf(policy, key)))!.split(':').map(Number);
      for (const child of children) child.stdin.write('go\n');
      const results = [];
      for (const out of outputs) results.push(JSON.parse((await out.next()).value as string));
      const [units, last] = (await redis.get(store.keyOf(policy, key)))!.split(':').map(Number);

      const admitted = 1 + results.reduce((sum, r) => sum + r.admitted, 0);
      const elapsedMs = last - first;
      const entitled = BURST + (QUOTA / WINDOW) * (elapsedMs / 1000);
      expect(results.every((r) => r.failures === 0 && r.decisions > r.admitted)).toBe(true);
      expect(elapsedMs).toBeGreaterThan(1_000);
      expect(admitted).toBeLessThanOrEqual(entitled);
      expect(admitted).toBeGreaterThan(entitled - 1);
      // The server's own account agrees: what was entitled minus what was admitted is what the bucket holds.
      expect(units / (WINDOW * 1000)).toBeCloseTo(entitled - admitted, 6);
    } finally {
      for (const child of children) child.kill();
    }
  }, 30_000);
});
