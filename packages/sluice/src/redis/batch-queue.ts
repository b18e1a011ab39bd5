import { type Check, type Decision, ErrorCode, type EvaluateMode, SluiceError } from '../core/index.js';
import { clusterSlot } from './cluster-slot.js';
import type { KeyLayout } from './key-layout.js';

/**
 * The script's operation codes: decide, reserve, peek, refund (`f`), settle (`s`), reset (`x`), lease renewal
 * (`l`, concurrency slots). See lua-script.ts.
 */
export type Op = 'd' | 'r' | 'p' | 'f' | 's' | 'x' | 'l';

/** The operation code of each decision mode. */
export const OP_OF: Readonly<Record<EvaluateMode, Op>> = Object.freeze({
  decide: 'd',
  reserve: 'r',
  peek: 'p',
});

/** One call of the store waiting for, or riding in, a script call. */
export interface Entry {
  readonly op: Op;
  /** The decision mode, or `undefined` for a refund, a settlement or a reset. */
  readonly mode: EvaluateMode | undefined;
  readonly checks: readonly Check[];
  readonly keys: readonly string[];
  /** Whole tokens; for a settlement the signed delta; for a lease renewal the slots this store still holds. */
  readonly cost: number;
  /** The injected clock's reading, or '' for the server's clock. */
  readonly now: string;
  /** Local time of the call, for the deny cache and the breaker. */
  readonly local: number;
  /** The deny cache's epoch when the call started: its answer is not remembered after a later refund or reset. */
  readonly denyEpoch: number;
  readonly slot: number;
  /** performance.now() when queued: a call never waits longer than timeoutMs for its turn either. */
  readonly queuedAt: number;
  resolve: (value: Decision | undefined) => void;
  reject: (error: unknown) => void;
}

/**
 * A new entry: each check's Redis key, and on a Cluster the slot they share.
 *
 * @param now - the injected clock's reading, or '' for the server's clock.
 * @param local - local time of the call, in whole milliseconds.
 * @throws SluiceError `ERR_CROSS_SLOT` when the keys of a call on a Cluster span slots (the store splits such
 * calls by slot first, see slot-groups.ts, so this only guards that).
 */
export function newEntry(
  layout: KeyLayout,
  cluster: boolean,
  checks: readonly Check[],
  cost: number,
  op: Op,
  mode: EvaluateMode | undefined,
  now: string,
  local: number,
  denyEpoch: number,
): Entry {
  const n = checks.length;
  const keys: string[] = new Array(n);
  let slot = 0;
  for (let i = 0; i < n; i++) {
    keys[i] = layout.key(checks[i].policy, checks[i].key);
    if (cluster) {
      const s = clusterSlot(keys[i]);
      if (i > 0 && s !== slot) {
        throw new SluiceError(
          ErrorCode.CrossSlot,
          `checks of one call must share a hash tag on a Redis Cluster: "${keys[0]}" and "${keys[i]}" differ`,
          { keys: [keys[0], keys[i]] },
        );
      }
      slot = s;
    }
  }
  const queuedAt = performance.now();
  return { op, mode, checks, keys, cost, now, local, denyEpoch, slot, queuedAt, resolve: noop, reject: noop };
}

function noop(): void {}

/** Settings and callbacks of a {@link BatchQueue}. */
export interface BatchQueueOptions {
  /** Most entries per script call. */
  readonly maxEntries: number;
  /** Script calls in flight at once. */
  readonly maxInFlight: number;
  /** How long an entry may wait for its turn before it is expired. */
  readonly timeoutMs: number;
  /** True on a Redis Cluster: a script call carries entries of one slot only. */
  readonly cluster: boolean;
  /** Sends one script call; the store calls {@link BatchQueue.done} when it settles. */
  readonly send: (entries: Entry[]) => void;
  /** An entry waited `timeoutMs` for a free slot: it follows the failure mode instead of waiting on. */
  readonly expire: (entry: Entry) => void;
}

/**
 * Groups concurrent calls into script calls: calls made in the same tick share one (per Cluster slot), up to
 * `maxEntries` each and `maxInFlight` at once; later calls wait and share the next one.
 */
export class BatchQueue {
  readonly #o: BatchQueueOptions;
  #queue: Entry[] = [];
  #scheduled = false;
  #inFlight = 0;
  /** Set by a failed call: the next flush expires the calls that waited a whole timeout. */
  #expireWaiting = false;
  readonly #flush = () => this.#flushQueue();

  constructor(options: BatchQueueOptions) {
    this.#o = options;
  }

  /** Queues an entry and resolves with its result (a decision, or `undefined` for a refund or reset). */
  push(entry: Entry): Promise<Decision | undefined> {
    return new Promise((resolve, reject) => {
      entry.resolve = resolve;
      entry.reject = reject;
      this.#queue.push(entry);
      this.#schedule();
    });
  }

  /**
   * One script call settled: its slot is free for the next batch.
   *
   * @param failed - true when the call failed or timed out: only then do queued calls that waited a whole timeout
   * follow the failure mode. After an answer Redis is answering, and a wait that long was this thread's own (a
   * busy event loop reading the answer late): those calls go to Redis, not to the failure mode (D-G78).
   */
  done(failed = false): void {
    this.#inFlight--;
    if (failed) this.#expireWaiting = true;
    this.#schedule();
  }

  #schedule(): void {
    if (this.#scheduled || this.#queue.length === 0 || this.#inFlight >= this.#o.maxInFlight) return;
    this.#scheduled = true;
    // A microtask, not a timer: calls made in the same tick share one script call, and a lone call waits for nothing.
    queueMicrotask(this.#flush);
  }

  #flushQueue(): void {
    this.#scheduled = false;
    const max = this.#o.maxEntries;
    if (this.#expireWaiting) {
      this.#expireWaiting = false;
      this.#expireQueued();
    }
    while (this.#queue.length > 0 && this.#inFlight < this.#o.maxInFlight) {
      const chunk = this.#queue.length <= max ? this.#queue : this.#queue.slice(0, max);
      this.#queue = this.#queue.length <= max ? [] : this.#queue.slice(max);
      if (!this.#o.cluster) {
        this.#sendOne(chunk);
        continue;
      }
      const bySlot = new Map<number, Entry[]>();
      for (const e of chunk) {
        const group = bySlot.get(e.slot);
        if (group === undefined) bySlot.set(e.slot, [e]);
        else group.push(e);
      }
      for (const group of bySlot.values()) this.#sendOne(group);
    }
  }

  #sendOne(entries: Entry[]): void {
    this.#inFlight++;
    this.#o.send(entries);
  }

  /** Calls that waited a whole timeout for a free slot follow the failure mode instead of waiting on. */
  #expireQueued(): void {
    const q = this.#queue;
    if (q.length === 0) return;
    const limit = performance.now() - this.#o.timeoutMs;
    if (q[0].queuedAt > limit) return;
    let kept = 0;
    for (let i = 0; i < q.length; i++) {
      const e = q[i];
      if (e.queuedAt <= limit) this.#o.expire(e);
      else q[kept++] = e;
    }
    q.length = kept;
  }
}
