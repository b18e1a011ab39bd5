import { rmSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { Worker } from 'node:worker_threads';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bundleWorker } from '../../../../test/support/bundle-worker.js';
import type { WireCheck, WireDecision, WorkerRequest } from '../../../../test/support/shared-store-worker.js';
import {
  type Check,
  type Decision,
  definePolicy,
  ManualClock,
  type PolicyOptions,
  type RateLimitStore,
} from '../core/index.js';
import { storeConformance } from '../testing/index.js';
import { SharedStore } from './index.js';

const ENTRY = fileURLToPath(new URL('../../../../test/support/shared-store-worker.ts', import.meta.url));
const THREADS = 4;
type Request = WorkerRequest extends infer R ? (R extends { id: number } ? Omit<R, 'id'> : never) : never;

/** Worker threads on one table, each answering requests by id. */
class Pool {
  readonly workers: Worker[] = [];
  #next = 0;
  #pending = new Map<number, (reply: Record<string, unknown>) => void>();

  async start(file: string, n: number): Promise<void> {
    for (let i = 0; i < n; i++) {
      const w = new Worker(file);
      w.on('message', (reply: { id: number }) => {
        this.#pending.get(reply.id)?.(reply);
        this.#pending.delete(reply.id);
      });
      this.workers.push(w);
    }
  }

  ask<T>(worker: number, request: Request): Promise<T> {
    const id = this.#next++;
    return new Promise((resolve, reject) => {
      this.#pending.set(id, (reply) => {
        if (reply.error) reject(new Error(`worker ${worker}: ${reply.error}`));
        else resolve(reply as T);
      });
      this.workers[worker].postMessage({ ...request, id });
    });
  }

  attach(table: SharedArrayBuffer): Promise<unknown> {
    return Promise.all(this.workers.map((_, i) => this.ask(i, { op: 'attach', table })));
  }

  /** Every worker makes `attempts` decisions, cycling through `lists`, all starting at once. */
  async hammer(now: number, lists: WireCheck[][], attempts: number) {
    const barrier = new SharedArrayBuffer(4);
    const replies = await Promise.all(
      this.workers.map((_, i) =>
        this.ask<{ admitted: number[]; maxSize: number }>(i, {
          op: 'hammer',
          now,
          lists,
          attempts,
          barrier,
          parties: this.workers.length,
        }),
      ),
    );
    return {
      admitted: lists.map((_, k) => replies.reduce((sum, r) => sum + r.admitted[k], 0)),
      maxSize: Math.max(...replies.map((r) => r.maxSize)),
    };
  }

  stop(): Promise<unknown> {
    return Promise.all(this.workers.map((w) => w.terminate()));
  }
}

const pool = new Pool();
let bundle = '';
beforeAll(async () => {
  bundle = await bundleWorker(ENTRY);
  await pool.start(bundle, THREADS);
});
afterAll(async () => {
  await pool.stop();
  rmSync(bundle, { force: true });
});

const T0 = 1_700_000_000_000;
const opts = (name: string, quota: number, burst: number): PolicyOptions => ({
  name,
  quota,
  window: 60,
  burst,
});

describe(`shared store across ${THREADS} worker threads`, () => {
  it('admits exactly burst + rate x elapsed in total on hammered keys, never more', async () => {
    const clock = new ManualClock(T0 + 2_000);
    const main = new SharedStore({ clock, sweepIntervalMs: 0, maxTrackedKeys: 10_000 });
    await pool.attach(main.table);
    const policy = opts('rl.hot', 600, 500); // 10 tokens per second
    const lists = ['a', 'b', 'c'].map((key) => [{ policy, key }]);
    // Frozen time: each key admits its burst once over all threads, from 4 x 2,000 attempts per key.
    let r = await pool.hammer(T0, lists, 6_000);
    expect(r.admitted).toEqual([500, 500, 500]);
    // 1,234 ms later: 12.34 tokens refilled per key, so 12 more admissions; the 0.34 carries over.
    r = await pool.hammer(T0 + 1_234, lists, 3_000);
    expect(r.admitted).toEqual([12, 12, 12]);
    r = await pool.hammer(T0 + 2_000, lists, 3_000); // 20 tokens in 2 s in all: 8 more
    expect(r.admitted).toEqual([8, 8, 8]);
    const check = definePolicy(policy);
    expect(main.peek([{ policy: check, key: 'a' }], 1).outcomes[0].remaining).toBe(0);
    main.close();
  });

  it('decides several policies all or nothing across threads', async () => {
    const main = new SharedStore({ clock: new ManualClock(T0), sweepIntervalMs: 0, maxTrackedKeys: 10_000 });
    await pool.attach(main.table);
    const a = opts('rl.a', 60, 700);
    const b = opts('rl.b', 60, 300); // shared by both lists: the scarce one
    const c = opts('rl.c', 60, 900);
    // Two orders of the checks, so lock order cannot come from the caller.
    const r = await pool.hammer(
      T0,
      [
        [
          { policy: a, key: 'k' },
          { policy: b, key: 'k' },
        ],
        [
          { policy: c, key: 'k' },
          { policy: b, key: 'k' },
        ],
      ],
      2_000,
    );
    expect(r.admitted[0] + r.admitted[1]).toBe(300);
    const left = (o: PolicyOptions) =>
      main.peek([{ policy: definePolicy(o), key: 'k' }], 1).outcomes[0].remaining;
    // A denied request took nothing from the policy that had room: exactly the admitted count was taken.
    expect(left(a)).toBe(700 - r.admitted[0]);
    expect(left(c)).toBe(900 - r.admitted[1]);
    expect(left(b)).toBe(0);
    main.close();
  });

  it('holds the cap on tracked keys while threads bring many more keys', async () => {
    const main = new SharedStore({ sweepIntervalMs: 0, maxTrackedKeys: 64 });
    await pool.attach(main.table);
    const policy = opts('rl.many', 60, 5);
    const lists = Array.from({ length: 500 }, (_, i) => [{ policy, key: `key-${i}` }]);
    const r = await pool.hammer(T0, lists, 2_000);
    // In flight, each thread may have reserved its new key before the eviction that makes room for it lands.
    expect(r.maxSize).toBeLessThanOrEqual(64 + THREADS);
    expect(main.size).toBeLessThanOrEqual(64);
    expect(main.stats().evictions).toBeGreaterThan(0);
    main.close();
  });
});

/**
 * The conformance suite with every call made by one of the worker threads in turn, on one shared table: the
 * threads must agree with the reference model as one store would.
 */
class ThreadedStore implements RateLimitStore {
  readonly kind = 'shared';
  #turn = 0;
  constructor(readonly clock: { now(): number }) {}

  async #call(
    method: 'decide' | 'reserve' | 'peek' | 'refund' | 'reset',
    checks: readonly Check[],
    cost: number,
  ) {
    const wireChecks = checks.map((c) => ({ policy: optionsOf(c.policy), key: c.key }));
    const worker = this.#turn++ % pool.workers.length;
    const reply = await pool.ask<{ decision?: WireDecision }>(worker, {
      op: 'call',
      now: this.clock.now(),
      method,
      checks: wireChecks,
      cost,
    });
    return reply.decision;
  }

  async #decision(
    method: 'decide' | 'reserve' | 'peek',
    checks: readonly Check[],
    cost: number,
  ): Promise<Decision> {
    const d = (await this.#call(method, checks, cost)) as WireDecision;
    const outcomes = d.outcomes.map((o, i) => ({ ...o, policy: checks[i].policy, key: checks[i].key }));
    return { ...d, outcomes, violated: d.violated.map((i) => outcomes[i]) };
  }

  decide(checks: readonly Check[], cost: number) {
    return this.#decision('decide', checks, cost);
  }
  reserve(checks: readonly Check[], cost: number) {
    return this.#decision('reserve', checks, cost);
  }
  peek(checks: readonly Check[], cost: number) {
    return this.#decision('peek', checks, cost);
  }
  async refund(checks: readonly Check[], cost: number) {
    await this.#call('refund', checks, cost);
  }
  async reset(checks: readonly Check[]) {
    await this.#call('reset', checks, 1);
  }
  close() {}
}

function optionsOf(p: Check['policy']): WireCheck['policy'] {
  // A concurrency policy crosses as what defines it: its slots and Retry-After hint, never a quota per window.
  if (p.concurrent > 0) {
    return { name: p.name, concurrent: p.concurrent, retryAfter: p.retryAfterHint, shadow: p.shadow };
  }
  return {
    ...(p.bucketName === undefined ? {} : { bucketName: p.bucketName }),
    name: p.name,
    burst: p.burst,
    shadow: p.shadow,
    ...(p.refill ? { refill: { ...p.refill } } : { quota: p.quota, window: p.window }),
    ...(p.queue ? { queue: { ...p.queue } } : {}),
  };
}

storeConformance(
  `shared (each call from one of ${THREADS} worker threads in turn)`,
  async (clock) => {
    const table = new SharedStore({ sweepIntervalMs: 0, maxTrackedKeys: 10_000 });
    await pool.attach(table.table);
    return new ThreadedStore(clock);
  },
  { propertyRuns: 15 },
);
