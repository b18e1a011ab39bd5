import { fileURLToPath } from 'node:url';
import { Worker } from 'node:worker_threads';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bundleWorker } from '../../../../test/support/bundle-worker.js';
import type { OverridesWorkerRequest } from '../../../../test/support/shared-overrides-worker.js';
import { ErrorCode, parseOverride, SluiceError } from '../core/index.js';
import { SharedOverrides, SharedStore } from './index.js';

const ENTRY = fileURLToPath(new URL('../../../../test/support/shared-overrides-worker.ts', import.meta.url));
const THREADS = 3;
const workers: Worker[] = [];
let next = 0;

function ask<T = Record<string, unknown>>(w: number, request: OverridesWorkerRequest): Promise<T> {
  const id = ++next;
  return new Promise((resolve, reject) => {
    const on = (reply: { id: number; error?: string }) => {
      if (reply.id !== id) return;
      workers[w].off('message', on);
      if (reply.error) reject(new Error(reply.error));
      else resolve(reply as T);
    };
    workers[w].on('message', on);
    workers[w].postMessage({ ...request, id });
  });
}

const store = new SharedStore({ maxTrackedKeys: 1000, sweepIntervalMs: 0 });
const overrides = new SharedOverrides({ bytes: 64 * 1024 });

beforeAll(async () => {
  const file = await bundleWorker(ENTRY);
  for (let i = 0; i < THREADS; i++) workers.push(new Worker(file));
  await Promise.all(
    workers.map((_, i) => ask(i, { op: 'attach', table: store.table, overrides: overrides.buffer })),
  );
}, 60_000);

afterAll(async () => {
  await Promise.all(workers.map((w) => w.terminate()));
});

const statuses = () =>
  Promise.all(
    workers.map((_, i) => ask<{ status: number }>(i, { op: 'evaluate', remoteAddress: '192.0.2.9' })),
  ).then((r) => r.map((x) => x.status));

describe('SharedOverrides across threads', () => {
  it('holds a block set by one thread on every thread at its next decision, and lifts it everywhere', async () => {
    expect(await statuses()).toEqual([200, 200, 200]);
    const rule = parseOverride(
      { pattern: 'ip:192.0.2.0/24', block: 403, reason: 'scanner' },
      Date.now(),
      'ops',
    );
    await overrides.set(rule, { action: 'set', id: rule.id, who: 'ops', at: Date.now(), reason: 'scanner' });
    expect(await statuses()).toEqual([403, 403, 403]);
    await ask(1, { op: 'remove', rule: rule.id });
    expect(await statuses()).toEqual([200, 200, 200]);
    // A 429 block needs an end: the worker's request has none, and the refusal crosses the thread.
    await expect(ask(2, { op: 'block', pattern: 'ip:192.0.2.9', status: 429 })).rejects.toThrow(/expiresAt/);
    await ask(2, { op: 'block', pattern: 'ip:192.0.2.9', status: 403 });
    expect(await statuses()).toEqual([403, 403, 403]);
    expect((await overrides.history()).map((c) => [c.action, c.who])).toEqual([
      ['set', 'ops'],
      ['remove', 'worker'],
      ['set', 'worker'],
    ]);
  });

  it('refuses a write beyond its room with ERR_OVERRIDES_FULL and keeps the rules it had', async () => {
    const small = new SharedOverrides({ bytes: 1024 });
    const big = parseOverride({ pattern: 'k', unlimited: true, reason: 'x'.repeat(500) }, Date.now(), 'ops');
    await small.set(big, { action: 'set', id: 'k', who: 'ops', at: 0, reason: 'x' });
    const again = parseOverride(
      { pattern: 'j', unlimited: true, reason: 'y'.repeat(500) },
      Date.now(),
      'ops',
    );
    const e = await small
      .set(again, { action: 'set', id: 'j', who: 'ops', at: 0, reason: 'y' })
      .catch((x) => x);
    expect(e).toBeInstanceOf(SluiceError);
    expect(e.code).toBe(ErrorCode.OverridesFull);
    expect(small.snapshot().rules.map((r) => r.id)).toEqual(['k']);
  });

  it('refuses a buffer that is not an overrides buffer', () => {
    expect(() => new SharedOverrides({ buffer: new SharedArrayBuffer(64) })).toThrow(/buffer/);
  });
});
