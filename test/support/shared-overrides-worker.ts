/**
 * A worker thread of the shared overrides test (packages/sluice/src/shared): attaches to the bucket table and
 * the overrides buffer it is given, and answers requests through its own HTTP limiter, or changes a rule.
 */
import { parentPort } from 'node:worker_threads';
import { Limiter, parseOverride } from '../../packages/sluice/src/core/index.js';
import { createHttpLimiter, type HttpLimiter } from '../../packages/sluice/src/http/index.js';
import { SharedOverrides, SharedStore } from '../../packages/sluice/src/shared/index.js';

/** What the test sends. */
export type OverridesWorkerRequest =
  | { readonly op: 'attach'; readonly table: SharedArrayBuffer; readonly overrides: SharedArrayBuffer }
  | { readonly op: 'evaluate'; readonly remoteAddress: string }
  | { readonly op: 'block'; readonly pattern: string; readonly status: 403 | 429 }
  | { readonly op: 'remove'; readonly rule: string }
  /** Blocks (403) `count` addresses `<prefix>.<i / 256>.<i % 256>`, one write each. */
  | { readonly op: 'fill'; readonly prefix: string; readonly count: number }
  /** Removes the blocks of `fill` at every `step`-th address. */
  | { readonly op: 'drop'; readonly prefix: string; readonly count: number; readonly step: number }
  /** Replies with the ids of the rules this thread sees, in their order (`ids`). */
  | { readonly op: 'ids' };

const address = (prefix: string, i: number) => `ip:${prefix}.${i >> 8}.${i & 255}`;

let http: HttpLimiter | undefined;
let overrides: SharedOverrides | undefined;

parentPort?.on('message', async (m: OverridesWorkerRequest & { id: number }) => {
  try {
    if (m.op === 'attach') {
      overrides = new SharedOverrides({ buffer: m.overrides });
      const limiter = new Limiter({
        policies: [{ name: 'rl.read', quota: 600, window: 60, burst: 100 }],
        store: new SharedStore({ table: m.table, sweepIntervalMs: 0 }),
      });
      http = createHttpLimiter({
        limiter,
        rules: [{ name: 'all', policies: ['rl.read'], key: 'ip' }],
        overrides,
      });
      parentPort?.postMessage({ id: m.id });
    } else if (m.op === 'evaluate') {
      const v = await http?.evaluate({
        method: 'GET',
        path: '/',
        headers: {},
        remoteAddress: m.remoteAddress,
      });
      parentPort?.postMessage({ id: m.id, status: v?.status });
    } else if (m.op === 'block') {
      const rule = parseOverride(
        { pattern: m.pattern, block: m.status, reason: 'worker' },
        Date.now(),
        'worker',
      );
      await overrides?.set(rule, {
        action: 'set',
        id: rule.id,
        who: 'worker',
        at: Date.now(),
        reason: 'worker',
      });
      parentPort?.postMessage({ id: m.id });
    } else if (m.op === 'fill') {
      for (let i = 0; i < m.count; i++) {
        const rule = parseOverride(
          { pattern: address(m.prefix, i), block: 403, reason: 'worker' },
          Date.now(),
          'worker',
        );
        await overrides?.set(rule, {
          action: 'set',
          id: rule.id,
          who: 'worker',
          at: Date.now(),
          reason: 'w',
        });
      }
      parentPort?.postMessage({ id: m.id });
    } else if (m.op === 'drop') {
      for (let i = 0; i < m.count; i += m.step) {
        const id = address(m.prefix, i);
        await overrides?.remove(id, { action: 'remove', id, who: 'worker', at: Date.now(), reason: 'w' });
      }
      parentPort?.postMessage({ id: m.id });
    } else if (m.op === 'ids') {
      parentPort?.postMessage({ id: m.id, ids: overrides?.snapshot().rules.map((r) => r.id) });
    } else {
      await overrides?.remove(m.rule, {
        action: 'remove',
        id: m.rule,
        who: 'worker',
        at: Date.now(),
        reason: 'worker',
      });
      parentPort?.postMessage({ id: m.id });
    }
  } catch (e) {
    parentPort?.postMessage({ id: m.id, error: String(e) });
  }
});
