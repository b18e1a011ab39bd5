/** Why {@link BucketTurns.run} answered a task by its `skip` instead of running it. */
export type TurnSkip = 'full' | 'gone' | 'failing';

/** How a task ended, as {@link TurnOptions.failing} sees it. */
export type TurnSettled<T> =
  | { readonly ok: true; readonly value: T }
  | { readonly ok: false; readonly error: unknown };

/** Hooks of one task in {@link BucketTurns.run}. */
export interface TurnOptions<T> {
  /** Asked when the turn comes: true when the caller left (call cancelled, deadline passed), and the task is skipped. */
  readonly gone?: () => boolean;
  /** Whether the way the task ended shows the store failing: the tasks then queued behind it are skipped. */
  readonly failing?: (settled: TurnSettled<T>) => boolean;
  /** The answer of a task that does not run (or does not wait, for `full`). */
  readonly skip: (why: TurnSkip) => T | Promise<T>;
}

/** The default bound of tasks waiting on one bucket (running task not included). */
export const MAX_WAITING_PER_BUCKET = 32;

interface Line {
  tail: Promise<boolean>;
  count: number;
}

/**
 * Turns on buckets within one process: a task runs once every task registered before it on any of its buckets has
 * finished, so tasks over shared buckets run one at a time, in arrival order, and tasks over other buckets run
 * alongside. A task registers all its buckets at once, in the same tick, so two tasks never wait for each other
 * (no deadlock whatever the order of their buckets). The table holds only buckets with a task running or waiting.
 *
 * With {@link TurnOptions}, a task is answered by its `skip` instead of running: at once when one of its buckets
 * already has `maxWaiting` tasks waiting (`full`); when its turn comes and its caller left (`gone`); when its turn
 * comes after a task that found the store failing (`failing`, passed on down the line, so the whole queue of that
 * moment is answered without a store call; the next task after the queue drained asks the store again).
 *
 * @example
 * ```ts
 * const turns = new BucketTurns();
 * await turns.run(['edge.path\n/admin', 'edge.ip\n10.0.0.1'], () => decideInSeveralCalls());
 * ```
 */
export class BucketTurns {
  readonly #lines = new Map<string, Line>();
  readonly #maxWaiting: number;

  /** @param maxWaiting - tasks that may wait on one bucket; a task with options past it is skipped as `full`. */
  constructor(maxWaiting = MAX_WAITING_PER_BUCKET) {
    this.#maxWaiting = maxWaiting;
  }

  /** Buckets with a task running or waiting now. */
  get size(): number {
    return this.#lines.size;
  }

  /** Whether a task runs or waits on any of `buckets`: a lookup per bucket, nothing allocated. */
  busy(buckets: readonly string[]): boolean {
    if (this.#lines.size === 0) return false;
    for (const b of buckets) if (this.#lines.has(b)) return true;
    return false;
  }

  /**
   * Runs `task` once the earlier tasks on any of `buckets` have settled.
   *
   * @param buckets - the bucket ids the task reads and writes (duplicates allowed).
   * @param task - the work; its rejection is the returned promise's, and ends its turn all the same.
   * @param options - when to skip the task, and its answer then (none: it always waits and runs).
   */
  async run<T>(buckets: readonly string[], task: () => Promise<T>, options?: TurnOptions<T>): Promise<T> {
    const lines = this.#lines;
    if (options !== undefined && lines.size > 0) {
      for (const b of buckets) {
        const line = lines.get(b);
        // count holds the running task: past the bound when count - 1 tasks wait already.
        if (line !== undefined && line.count > this.#maxWaiting) return await options.skip('full');
      }
    }
    let release: (failing: boolean) => void = () => {};
    const mine = new Promise<boolean>((resolve) => {
      release = resolve;
    });
    const before: Promise<boolean>[] = [];
    const held: [string, Line][] = [];
    for (const b of buckets) {
      const line = lines.get(b);
      if (line === undefined) {
        const created = { tail: mine, count: 1 };
        lines.set(b, created);
        held.push([b, created]);
      } else if (line.tail !== mine) {
        before.push(line.tail);
        line.tail = mine;
        line.count++;
        held.push([b, line]);
      }
    }
    let failing = false;
    try {
      if (before.length > 0) failing = (await Promise.all(before)).includes(true);
      if (options !== undefined) {
        // A task that leaves passes the store's state on as it found it.
        if (options.gone?.() === true) return await options.skip('gone');
        if (failing) return await options.skip('failing');
      }
      failing = false;
      try {
        const value = await task();
        failing = options?.failing?.({ ok: true, value }) === true;
        return value;
      } catch (error) {
        failing = options?.failing?.({ ok: false, error }) === true;
        throw error;
      }
    } finally {
      release(failing);
      for (const [b, line] of held) {
        line.count--;
        if (line.tail === mine) lines.delete(b);
      }
    }
  }
}
