import type { BucketCounts, QuotaStore } from 'sluice/quota';

/** A call on a quota store, as it travels from a worker thread to the main thread (structured clone). */
export type QuotaCall =
  | {
      readonly method: 'add';
      readonly args: [bucket: number, counts: BucketCounts, window: readonly number[], expireAt: number];
    }
  | { readonly method: 'totals'; readonly args: [tenants: readonly string[], window: readonly number[]] }
  | { readonly method: 'usage'; readonly args: [tenant: string, window: readonly number[]] }
  | { readonly method: 'top'; readonly args: [window: readonly number[], n: number] }
  | { readonly method: 'claimAlert'; readonly args: [tenant: string, threshold: number, ttlSeconds: number] }
  | { readonly method: 'releaseAlert'; readonly args: [tenant: string, threshold: number] };

/**
 * A quota store that lives on another thread: each call is sent as a message and answered by
 * {@link answerQuotaCall} there. With `sluice serve --threads` and quota usage kept in memory, every thread's
 * tracker writes to the main thread's one store, so usage, threshold alerts and their webhooks count the
 * requests of all threads once. The tracker flushes in batches, so this is never on a request's path.
 *
 * @example
 * ```ts
 * const store = new ThreadQuotaStore((id, call) => parentPort.postMessage({ type: 'quota', id, call }));
 * parentPort.on('message', (m) => m.type === 'quota-result' && store.settle(m.id, m.value, m.error));
 * ```
 */
export class ThreadQuotaStore implements QuotaStore {
  readonly kind = 'memory';
  readonly #send: (id: number, call: QuotaCall) => void;
  readonly #pending = new Map<number, { resolve: (v: unknown) => void; reject: (e: Error) => void }>();
  #next = 0;

  /** @param send - posts a call to the thread that holds the store. */
  constructor(send: (id: number, call: QuotaCall) => void) {
    this.#send = send;
  }

  /** Settles call `id` with the other thread's answer: its value, or the message of its error. */
  settle(id: number, value: unknown, error: string | undefined): void {
    const p = this.#pending.get(id);
    if (p === undefined) return;
    this.#pending.delete(id);
    if (error === undefined) p.resolve(value);
    else p.reject(new Error(error));
  }

  add(
    bucket: number,
    counts: BucketCounts,
    window: readonly number[],
    expireAt: number,
  ): Promise<Map<string, number>> {
    return this.#call({ method: 'add', args: [bucket, counts, window, expireAt] });
  }

  totals(tenants: readonly string[], window: readonly number[]): Promise<Map<string, number>> {
    return this.#call({ method: 'totals', args: [tenants, window] });
  }

  usage(tenant: string, window: readonly number[]): Promise<Map<string, number>> {
    return this.#call({ method: 'usage', args: [tenant, window] });
  }

  top(window: readonly number[], n: number): Promise<[string, number][]> {
    return this.#call({ method: 'top', args: [window, n] });
  }

  claimAlert(tenant: string, threshold: number, ttlSeconds: number): Promise<boolean> {
    return this.#call({ method: 'claimAlert', args: [tenant, threshold, ttlSeconds] });
  }

  releaseAlert(tenant: string, threshold: number): Promise<void> {
    return this.#call({ method: 'releaseAlert', args: [tenant, threshold] });
  }

  /** The store itself belongs to the other thread; calls still unanswered are refused. */
  async close(): Promise<void> {
    for (const p of this.#pending.values()) p.reject(new Error('the quota store was closed'));
    this.#pending.clear();
  }

  #call<T>(call: QuotaCall): Promise<T> {
    const id = this.#next++;
    return new Promise<T>((resolve, reject) => {
      this.#pending.set(id, { resolve: resolve as (v: unknown) => void, reject });
      this.#send(id, call);
    });
  }
}

/**
 * Runs a {@link ThreadQuotaStore}'s call on the store it stands for.
 *
 * @returns the store's answer, ready to post back.
 */
export function answerQuotaCall(store: QuotaStore, call: QuotaCall): Promise<unknown> {
  switch (call.method) {
    case 'add':
      return store.add(...call.args);
    case 'totals':
      return store.totals(...call.args);
    case 'usage':
      return store.usage(...call.args);
    case 'top':
      return store.top(...call.args);
    case 'claimAlert':
      return store.claimAlert(...call.args);
    case 'releaseAlert':
      return store.releaseAlert(...call.args);
  }
}
