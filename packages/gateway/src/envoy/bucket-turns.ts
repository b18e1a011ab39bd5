/**
 * Turns on buckets within one process: a task runs once every task registered before it on any of its buckets has
 * finished, so tasks over shared buckets run one at a time, in arrival order, and tasks over other buckets run
 * alongside. A task registers all its buckets at once, in the same tick, so two tasks never wait for each other
 * (no deadlock whatever the order of their buckets). The table holds only buckets with a task running or waiting.
 *
 * @example
 * ```ts
 * const turns = new BucketTurns();
 * await turns.run(['edge.path\n/admin', 'edge.ip\n10.0.0.1'], () => decideInSeveralCalls());
 * ```
 */
export class BucketTurns {
  readonly #tails = new Map<string, Promise<void>>();

  /** Buckets with a task running or waiting now. */
  get size(): number {
    return this.#tails.size;
  }

  /** Whether a task runs or waits on any of `buckets`: a lookup per bucket, nothing allocated. */
  busy(buckets: readonly string[]): boolean {
    if (this.#tails.size === 0) return false;
    for (const b of buckets) if (this.#tails.has(b)) return true;
    return false;
  }

  /**
   * Runs `task` once the earlier tasks on any of `buckets` have settled.
   *
   * @param buckets - the bucket ids the task reads and writes (duplicates allowed).
   * @param task - the work; its rejection is the returned promise's, and ends its turn all the same.
   */
  async run<T>(buckets: readonly string[], task: () => Promise<T>): Promise<T> {
    const tails = this.#tails;
    let release: () => void = () => {};
    const mine = new Promise<void>((resolve) => {
      release = resolve;
    });
    const before: Promise<void>[] = [];
    for (const b of buckets) {
      const prev = tails.get(b);
      if (prev === mine) continue;
      if (prev !== undefined) before.push(prev);
      tails.set(b, mine);
    }
    try {
      if (before.length > 0) await Promise.all(before);
      return await task();
    } finally {
      release();
      for (const b of buckets) if (tails.get(b) === mine) tails.delete(b);
    }
  }
}
