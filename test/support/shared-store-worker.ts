/**
 * A worker thread of the shared store's cross-thread tests (packages/sluice/src/shared): attaches to the table
 * it is given and, on request, either hammers keys as fast as it can (after a start barrier, so every worker
 * runs at once) or runs one store call for the proxy store of the conformance suite.
 */
import { parentPort } from 'node:worker_threads';
import {
  type Check,
  type Decision,
  definePolicy,
  ManualClock,
  type Policy,
  type PolicyOptions,
} from '../../packages/sluice/src/core/index.js';
import { SharedStore } from '../../packages/sluice/src/shared/index.js';

/** A check as it crosses threads: the policy's definition (and an override policy's bucket name) and the key. */
export interface WireCheck {
  readonly policy: PolicyOptions & { readonly bucketName?: string };
  readonly key: string;
}

/** What the tests send. */
export type WorkerRequest =
  | { readonly op: 'attach'; readonly id: number; readonly table: SharedArrayBuffer }
  | {
      readonly op: 'hammer';
      readonly id: number;
      readonly now: number;
      /** Check lists to cycle through, one per attempt. */
      readonly lists: readonly (readonly WireCheck[])[];
      readonly attempts: number;
      /** Start barrier: each worker adds 1 at [0] and starts when it reads `parties`. */
      readonly barrier: SharedArrayBuffer;
      readonly parties: number;
    }
  | {
      readonly op: 'call';
      readonly id: number;
      readonly now: number;
      readonly method: 'decide' | 'reserve' | 'peek' | 'refund' | 'reset';
      readonly checks: readonly WireCheck[];
      readonly cost: number;
    };

/** A decision as it crosses threads: outcomes refer to checks by position. */
export interface WireDecision {
  readonly allowed: boolean;
  readonly reason: Decision['reason'];
  readonly cost: number;
  readonly retryAfterSeconds: number;
  readonly delayMs: number;
  readonly outcomes: readonly {
    limited: boolean;
    remaining: number;
    resetSeconds: number;
    retryAfterSeconds: number;
  }[];
  readonly violated: readonly number[];
}

const clock = new ManualClock(0);
let store: SharedStore | undefined;
const policies = new Map<string, Policy>();

function policyOf(o: WireCheck['policy']): Policy {
  const id = JSON.stringify(o);
  let p = policies.get(id);
  if (p === undefined) {
    const { bucketName, ...options } = o;
    // An override policy as overridePolicy builds it in each thread: the definition and its own bucket name.
    p =
      bucketName === undefined
        ? definePolicy(options)
        : Object.freeze({ ...definePolicy(options), bucketName });
    policies.set(id, p);
  }
  return p;
}

const toChecks = (list: readonly WireCheck[]): Check[] =>
  list.map((c) => ({ policy: policyOf(c.policy), key: c.key }));

function wire(d: Decision): WireDecision {
  return {
    allowed: d.allowed,
    reason: d.reason,
    cost: d.cost,
    retryAfterSeconds: d.retryAfterSeconds,
    delayMs: d.delayMs,
    outcomes: d.outcomes.map((o) => ({
      limited: o.limited,
      remaining: o.remaining,
      resetSeconds: o.resetSeconds,
      retryAfterSeconds: o.retryAfterSeconds,
    })),
    violated: d.violated.map((v) => d.outcomes.indexOf(v)),
  };
}

parentPort?.on('message', (m: WorkerRequest) => {
  try {
    if (m.op === 'attach') {
      store?.close();
      store = new SharedStore({ table: m.table, clock, sweepIntervalMs: 0 });
      parentPort?.postMessage({ id: m.id });
      return;
    }
    const s = store as SharedStore;
    clock.set(m.now);
    if (m.op === 'call') {
      const checks = toChecks(m.checks);
      if (m.method === 'refund') s.refund(checks, m.cost);
      else if (m.method === 'reset') s.reset(checks);
      const decision =
        m.method === 'refund' || m.method === 'reset' ? undefined : wire(s[m.method](checks, m.cost));
      parentPort?.postMessage({ id: m.id, decision });
      return;
    }
    const lists = m.lists.map(toChecks);
    const admitted = new Array<number>(lists.length).fill(0);
    const barrier = new Int32Array(m.barrier);
    Atomics.add(barrier, 0, 1);
    while (Atomics.load(barrier, 0) < m.parties) {
      // spin: every worker starts at once, for the most contention
    }
    let maxSize = 0;
    for (let i = 0; i < m.attempts; i++) {
      const which = i % lists.length;
      if (s.decide(lists[which], 1).allowed) admitted[which]++;
      const size = s.size;
      if (size > maxSize) maxSize = size;
    }
    parentPort?.postMessage({ id: m.id, admitted, maxSize });
  } catch (e) {
    parentPort?.postMessage({ id: m.id, error: String((e as Error)?.stack ?? e) });
  }
});
