import { fileURLToPath } from 'node:url';
import { Worker } from 'node:worker_threads';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bundleWorker } from '../../../../test/support/bundle-worker.js';
import type { OverridesWorkerRequest } from '../../../../test/support/shared-overrides-worker.js';
import { ErrorCode, parseOverride, SluiceError } from '../core/index.js';
import { SharedOverrides, SharedStore } from './index.js';
import { OverrideJournal } from './override-journal.js';

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

  it('brings every thread up to date rule by rule while two threads write at once, through compactions of its log', async () => {
    // Room for the rules in force but not for every write: the log is written again while the threads write.
    const busy = new SharedOverrides({ bytes: 320 * 1024 });
    await Promise.all(
      workers.map((_, i) => ask(i, { op: 'attach', table: store.table, overrides: busy.buffer })),
    );
    const held = busy.snapshot().version;
    await ask(0, { op: 'fill', prefix: '10.9', count: 1 });
    // The change of another thread comes as that rule alone: this thread's index is not compiled again.
    expect(
      busy
        .snapshot()
        .changesSince?.(held)
        ?.map((d) => d.id),
    ).toEqual(['ip:10.9.0.0']);
    // Each address twice: the second writes replace the first, so a compaction has room to win back.
    await Promise.all([
      ask(0, { op: 'fill', prefix: '10.0', count: 400 }).then(() =>
        ask(0, { op: 'fill', prefix: '10.0', count: 400 }),
      ),
      ask(1, { op: 'fill', prefix: '10.1', count: 400 }).then(() =>
        ask(1, { op: 'fill', prefix: '10.1', count: 400 }),
      ),
    ]);
    await Promise.all([
      ask(1, { op: 'drop', prefix: '10.0', count: 400, step: 2 }),
      ask(2, { op: 'drop', prefix: '10.1', count: 400, step: 4 }),
    ]);
    expect(OverrideJournal.attach(busy.buffer)?.generation).toBeGreaterThan(0);
    const seen = await Promise.all(workers.map((_, i) => ask<{ ids: string[] }>(i, { op: 'ids' })));
    const here = busy.snapshot().rules.map((r) => r.id);
    expect(here).toHaveLength(1 + 200 + 300);
    for (const s of seen) expect(s.ids).toEqual(here);
    const at = (remoteAddress: string) =>
      Promise.all(workers.map((_, i) => ask<{ status: number }>(i, { op: 'evaluate', remoteAddress })));
    expect((await at('10.0.0.1')).map((r) => r.status)).toEqual([403, 403, 403]);
    expect((await at('10.0.0.2')).map((r) => r.status)).toEqual([200, 200, 200]);
    expect((await at('10.1.1.3')).map((r) => r.status)).toEqual([403, 403, 403]);
    expect((await at('10.1.1.4')).map((r) => r.status)).toEqual([200, 200, 200]);
    await Promise.all(
      workers.map((_, i) => ask(i, { op: 'attach', table: store.table, overrides: overrides.buffer })),
    );
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
