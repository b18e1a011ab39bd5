import type { QuotaStore } from 'sluice/quota';
import type { ConfigOverrides } from '../config/load-config.js';
import type { ThreadFeed } from '../dashboard/index.js';
import type { ThreadMetrics } from '../metrics/aggregate-threads.js';
import type { QuotaCall } from '../quota/thread-quota-store.js';
import type { OpenedStore } from '../store/create-store.js';

/** What a gateway running as one of several threads of `sluice serve --threads` is given. */
export interface GatewayThread {
  /** How many threads serve (each with Redis opens a store whose local failure mode is its share). */
  readonly threads: number;
  /**
   * The thread's store: a `SharedStore` on the main thread's table with the memory store, so a limit holds over
   * every thread; absent with Redis, where each thread opens its own connection and Redis already shares limits.
   */
  readonly store?: OpenedStore;
  /**
   * Whether this thread opens the admin, decision API and Envoy listeners. Only the first thread does: those
   * ports are not shared, and the admin API reads the same buckets from any thread.
   */
  readonly sideListeners: boolean;
  /** The text `/metrics` serves: every thread's series, collected and aggregated by the main thread. */
  readonly scrape?: () => Promise<string>;
  /** The first thread: takes the other threads' dashboard feeds (`Gateway.peers`) and shows the whole gateway. */
  readonly collectsFeeds?: boolean;
  /** The other threads: where their dashboard feed goes, twice a second. */
  readonly publish?: (feed: ThreadFeed) => void;
  /**
   * After this thread reset a key in the store, makes every other thread drop what it holds of the key in
   * memory (a Redis store's deny cache and local failure mode buckets); resolves once each one confirmed, so the
   * admin API answers only when no thread can still deny from an old answer.
   *
   * @throws Error naming a thread that did not confirm in time.
   */
  readonly forgetOnPeers?: (key: string) => Promise<void>;
  /** The secret of limited keys' hashes, one for every thread so that their lists merge by hash. */
  readonly hashSecret?: string;
  /**
   * Where tenant quota usage lives when it is kept in memory: the main thread's store, so that usage, alerts
   * and webhooks count every thread's requests once.
   */
  readonly quotaStore?: QuotaStore;
  /**
   * The proxy connections open over every thread (a `ConnectionCounts` table): file descriptors are the
   * process's, so `server.maxConnections` and `server.maxConnectionsPerClient` cap the process, not each thread.
   */
  readonly connections?: SharedArrayBuffer;
  /** The requests in flight load shedding counts over every thread (`overload:` caps the process). */
  readonly overloadCount?: SharedArrayBuffer;
}

/** What the main thread hands each worker thread (its `workerData`). */
export interface ThreadWorkerData {
  /** 0 for the first thread; it appears as `thread` on every log line. */
  readonly index: number;
  readonly file: string;
  /** The file's text, read once by the main thread: every thread starts from the same version. */
  readonly source: string;
  readonly overrides: ConfigOverrides;
  /** The `SharedStore` table with the memory store; `undefined` with Redis. */
  readonly table: SharedArrayBuffer | undefined;
  /** The `SharedOverrides` buffer with the memory store; `undefined` with Redis (overrides live there). */
  readonly overrideBuffer: SharedArrayBuffer | undefined;
  /** How many threads serve. */
  readonly threads: number;
  /** The secret of limited keys' hashes, the same in every thread. */
  readonly hashSecret: string;
  /** The proxy connections open over every thread: see {@link GatewayThread.connections}. */
  readonly connections: SharedArrayBuffer;
  /** The requests in flight load shedding counts: see {@link GatewayThread.overloadCount}. */
  readonly overloadCount: SharedArrayBuffer;
}

/** Messages from the main thread to a worker thread. */
export type ToWorker =
  /** Apply this configuration text, read and validated once by the main thread for every thread. */
  | { readonly type: 'reload'; readonly source: string }
  /** Every thread listens: `/ready` may answer 200 now; answer `serving`. */
  | { readonly type: 'every-thread-listens' }
  /** Drop what you hold of `key`'s buckets in memory (another thread reset them); confirm with `forgotten`. */
  | { readonly type: 'forget'; readonly id: number; readonly key: string }
  /** The answer to your `forget-peers` request `id`: every other thread confirmed, or why not. */
  | { readonly type: 'peers-forgot'; readonly id: number; readonly error?: string }
  | { readonly type: 'close' }
  /** Send your series (`registry.getMetricsAsJSON()`) as `collected` with this id. */
  | { readonly type: 'collect'; readonly id: number }
  /** The answer to your `scrape` request `id`: the aggregated text, or why there is none. */
  | { readonly type: 'scraped'; readonly id: number; readonly text?: string; readonly error?: string }
  /** To the first thread: thread `source`'s dashboard feed. */
  | { readonly type: 'feed'; readonly source: number; readonly feed: ThreadFeed }
  /** The answer to your quota store call `id`. */
  | { readonly type: 'quota-result'; readonly id: number; readonly value?: unknown; readonly error?: string };

/** Messages from a worker thread to the main thread. */
export type FromWorker =
  | { readonly type: 'listening'; readonly url: string }
  | { readonly type: 'failed'; readonly message: string }
  /** The answer to `every-thread-listens`: this thread's `/ready` answers 200 from now on. */
  | { readonly type: 'serving' }
  /** A `/metrics` request reached this thread: answer with every thread's series aggregated. */
  | { readonly type: 'scrape'; readonly id: number }
  | { readonly type: 'collected'; readonly id: number; readonly metrics: ThreadMetrics }
  /** This thread reset `key`: have every other thread forget it, then answer `peers-forgot` with this id. */
  | { readonly type: 'forget-peers'; readonly id: number; readonly key: string }
  /** This thread dropped what it held of the key of `forget` request `id`. */
  | { readonly type: 'forgotten'; readonly id: number }
  /** This thread's dashboard feed, for the first thread. */
  | { readonly type: 'feed'; readonly feed: ThreadFeed }
  /** A call on the main thread's quota store. */
  | { readonly type: 'quota'; readonly id: number; readonly call: QuotaCall };
