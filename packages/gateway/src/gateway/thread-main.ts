import { randomBytes } from 'node:crypto';
import { Worker } from 'node:worker_threads';
import { ErrorCode, SluiceError } from 'sluice';
import { MemoryQuotaStore } from 'sluice/quota';
import { SharedOverrides, SharedStore } from 'sluice/shared';
import { SHARED_IN_FLIGHT_BYTES } from '../admission/in-flight-count.js';
import type { GatewayConfig } from '../config/gateway-config.js';
import { type ConfigOverrides, loadConfigText, readConfigSource } from '../config/load-config.js';
import { formatViolations } from '../config/violation.js';
import { createLogger, type Logger } from '../log/create-logger.js';
import { logRejectedReload } from '../log/log-rejected-reload.js';
import { aggregateThreadMetrics, type ThreadMetrics } from '../metrics/aggregate-threads.js';
import { answerQuotaCall, type QuotaCall } from '../quota/thread-quota-store.js';
import { ConnectionCounts } from '../server/connection-counts.js';
import { sourceVersion } from './config-source.js';
import { watchConfigFile } from './config-watch.js';
import { lostUpstream } from './reload-controller.js';
import type { FromWorker, ThreadWorkerData, ToWorker } from './thread-messages.js';

/**
 * How long a scrape waits for a thread's series before leaving that thread out, and a reset for a thread's
 * confirmation.
 */
const COLLECT_MS = 2_000;

/** Options of {@link ThreadedGateway.start}. */
export interface ThreadedGatewayOptions {
  /**
   * The configuration file. The main thread reads it once, at start and at each reload, and hands the text to
   * every thread, so that all of them run one version even when the file changes between reads.
   */
  readonly file: string;
  readonly overrides: ConfigOverrides;
  /** Worker threads to start, each with a gateway on the same port. */
  readonly threads: number;
}

// From source (tsx) the worker is the .ts file next to this one; built, the .js file.
const WORKER = new URL(
  import.meta.url.endsWith('.ts') ? './thread-worker.ts' : './thread-worker.js',
  import.meta.url,
);

/**
 * Several gateways in worker threads of this process, all listening on one port with `reusePort` so that the
 * kernel spreads connections over them (`sluice serve --threads N`). With the memory store they decide over one
 * `SharedStore` table, so a limit holds exactly over all threads. The first thread starts alone (it binds a
 * port chosen by the system when the port is 0), then the others on its port.
 */
export class ThreadedGateway {
  /** Settles with the exit code when a thread ends on its own (a crash), after the others are closed. */
  readonly ended: Promise<number>;
  readonly #workers: Worker[];
  readonly #exited = new WeakSet<Worker>();
  readonly #store: SharedStore | undefined;
  /** Overrides and blocks every thread applies, with the memory store (Redis keeps its own). */
  readonly #overrides: SharedOverrides | undefined;
  readonly #prefix: string;
  readonly #threads: number;
  /** One secret for every thread's limited-key hashes, so that the first thread merges their lists by hash. */
  readonly #hashSecret = randomBytes(32).toString('hex');
  /** The proxy connections open over every thread, against the process's caps. */
  readonly #connections = ConnectionCounts.create();
  /** The requests in flight load shedding counts over every thread. */
  readonly #overloadCount = new SharedArrayBuffer(SHARED_IN_FLIGHT_BYTES);
  /** Tenant quota usage kept in memory, for every thread (created on the first call). */
  #quotaStore: MemoryQuotaStore | undefined;
  /** Threads that were told every thread listens and have not answered `serving` yet. */
  readonly #toServe = new Map<Worker, () => void>();
  /** Collections in flight: `<collection id>:<thread index>` to the resolver of that thread's answer. */
  readonly #collecting = new Map<string, (answer: unknown) => void>();
  #collections = 0;
  /** Reports a thread that stopped while serving, closes the others and settles `ended`. */
  readonly #onCrash: (w: Worker, reason: string) => void;
  #closing: Promise<void> | undefined;
  readonly #file: string;
  readonly #configOverrides: ConfigOverrides;
  readonly #logger: Logger;
  /**
   * The configuration the threads run, as of the last reload handed to them: a reload that would take its upstream
   * away is refused here, once, as each thread would.
   */
  #running: GatewayConfig;
  /** Stops the main thread's watch of the file (the threads do not watch it themselves). */
  #unwatch: (() => void) | undefined;

  private constructor(
    store: SharedStore | undefined,
    config: GatewayConfig,
    options: ThreadedGatewayOptions,
    logger: Logger,
  ) {
    const threads = options.threads;
    const prefix = config.metrics.prefix;
    this.#running = config;
    this.#file = options.file;
    this.#configOverrides = options.overrides;
    this.#logger = logger;
    this.#overrides = store === undefined ? undefined : new SharedOverrides();
    this.#store = store;
    this.#prefix = prefix;
    this.#threads = threads;
    this.#workers = [];
    let end: (code: number) => void = () => undefined;
    this.ended = new Promise((resolve) => {
      end = resolve;
    });
    this.#onCrash = (w, e) => {
      if (this.#closing !== undefined) return;
      process.stderr.write(`sluice: thread ${this.#workers.indexOf(w)} stopped: ${e}\n`);
      void this.close().then(() => end(1));
    };
  }

  /**
   * Starts the threads and resolves once every one listens.
   *
   * @returns the gateway and the proxy's base URL.
   * @throws SluiceError `ERR_INVALID_CONFIG` when the file cannot be read or is invalid; the first thread's start
   * error (for example `EADDRINUSE`), after every thread started is closed.
   */
  static async start(options: ThreadedGatewayOptions): Promise<{ gateway: ThreadedGateway; url: string }> {
    const source = readConfigSource(options.file);
    const loaded = loadConfigText(source, options.file, { overrides: options.overrides });
    if (!loaded.ok) {
      throw new SluiceError(
        ErrorCode.InvalidConfig,
        `invalid configuration ${options.file}:\n${formatViolations(options.file, loaded.violations)}`,
        { file: options.file, violations: loaded.violations },
      );
    }
    const c = loaded.config;
    const logger = createLogger(c.logging.level);
    // The main thread only holds the table; the threads' stores sweep it.
    const store =
      c.store.type === 'memory'
        ? new SharedStore({ maxTrackedKeys: c.maxTrackedKeys, sweepIntervalMs: 0 })
        : undefined;
    const g = new ThreadedGateway(store, c, options, logger);
    try {
      const url = await g.#spawn(0, source, options.overrides);
      const port = Number(new URL(url).port);
      const rest = Array.from({ length: options.threads - 1 }, (_, i) =>
        g.#spawn(i + 1, source, { ...options.overrides, port }),
      );
      await Promise.all(rest);
      // No thread's `/ready` says 200 before the last one listens: a load balancer would send traffic to a
      // process that serves from half its threads, and shut the rest out of the port's share.
      await g.#everyThreadListens();
      // One watch for the process: a thread each would read the file each, maybe between two writes of a save.
      // It starts before the line below, so that a save made by whoever waited for that line is seen; a save made
      // since the file was read above (the first thread answered meanwhile) is found by comparing the text.
      if (c.reload.watch) g.#unwatch = watchConfigFile(options.file, () => g.reload(), logger, source);
      // One line once the whole process serves, for operators and scripts that wait for it.
      logger.info(
        { url, threads: options.threads, store: store === undefined ? 'redis' : 'shared' },
        'sluice gateway listening on every thread',
      );
      return { gateway: g, url };
    } catch (e) {
      await g.close();
      throw e;
    }
  }

  /** Tells every thread that the whole process listens, and resolves once each one's `/ready` says so. */
  #everyThreadListens(): Promise<void> {
    return Promise.all(
      this.#workers.map(
        (w) =>
          new Promise<void>((resolve) => {
            this.#toServe.set(w, resolve);
            w.postMessage({ type: 'every-thread-listens' } satisfies ToWorker);
          }),
      ),
    ).then(() => undefined);
  }

  /**
   * Reloads the configuration file in every thread (the CLI calls it on SIGHUP, the watch on a save). The file
   * is read and validated once, here: a bad file is reported once and no thread changes; a good one's text goes
   * to every thread, so that all of them run the same version even if the file changes again meanwhile.
   *
   * @returns true when the text was handed to the threads (each still reports its own reload).
   */
  reload(): boolean {
    const file = this.#file;
    const logger = this.#logger;
    let source: string;
    let loaded: ReturnType<typeof loadConfigText>;
    try {
      source = readConfigSource(file);
      loaded = loadConfigText(source, file, { overrides: this.#configOverrides });
    } catch (e) {
      logger.error({ file, err: e }, 'configuration reload failed; keeping the current configuration');
      return false;
    }
    const violations = loaded.ok ? lostUpstream(this.#running, loaded.config, file) : loaded.violations;
    if (!loaded.ok || violations.length > 0) {
      logRejectedReload(logger, file, violations);
      return false;
    }
    this.#running = loaded.config;
    logger.info(
      { file, version: sourceVersion(source), threads: this.#threads },
      'configuration read for every thread',
    );
    for (const w of this.#workers)
      if (!this.#exited.has(w)) w.postMessage({ type: 'reload', source } satisfies ToWorker);
    return true;
  }

  /** Closes every thread's gateway (each drains its requests in flight), then releases the table. */
  close(): Promise<void> {
    this.#closing ??= (async () => {
      this.#unwatch?.();
      await Promise.all(
        this.#workers.map(
          (w) =>
            new Promise<void>((resolve) => {
              if (this.#exited.has(w)) return resolve();
              w.once('exit', () => resolve());
              w.postMessage({ type: 'close' } satisfies ToWorker);
            }),
        ),
      );
      this.#store?.close();
    })();
    return this.#closing;
  }

  #spawn(index: number, source: string, overrides: ConfigOverrides): Promise<string> {
    const data: ThreadWorkerData = {
      index,
      file: this.#file,
      source,
      overrides,
      table: this.#store?.table,
      overrideBuffer: this.#overrides?.buffer,
      threads: this.#threads,
      hashSecret: this.#hashSecret,
      connections: this.#connections.buffer,
      overloadCount: this.#overloadCount,
    };
    const w = new Worker(WORKER, { workerData: data });
    this.#workers.push(w);
    return new Promise((resolve, reject) => {
      let started = false;
      w.on('message', (m: FromWorker) => {
        if (m.type === 'scrape') this.#scrape(w, m.id);
        else if (m.type === 'feed') this.#toFirst({ type: 'feed', source: index, feed: m.feed });
        else if (m.type === 'quota') this.#quota(w, m.id, m.call);
        else if (m.type === 'collected') this.#collecting.get(`${m.id}:${index}`)?.(m.metrics);
        else if (m.type === 'forgotten') this.#collecting.get(`${m.id}:${index}`)?.(true);
        else if (m.type === 'forget-peers') this.#forgetPeers(w, m.id, m.key);
        else if (m.type === 'serving') {
          this.#toServe.get(w)?.();
          this.#toServe.delete(w);
        } else if (m.type === 'listening') {
          started = true;
          resolve(m.url);
        } else reject(new Error(m.message));
      });
      w.on('error', (e) => {
        if (started) this.#onCrash(w, e.message);
        else reject(e);
      });
      w.once('exit', (code) => {
        this.#exited.add(w);
        // A thread that ends before answering `serving` must not hold the start: the crash path reports it.
        this.#toServe.get(w)?.();
        this.#toServe.delete(w);
        if (started) this.#onCrash(w, `exit code ${code}`);
        else reject(new Error(`thread ${index} exited with code ${code} before listening`));
      });
    });
  }

  /** Passes a message on to the first thread, which serves the dashboard and the admin API. */
  #toFirst(m: ToWorker): void {
    const first = this.#workers[0];
    if (first !== undefined && !this.#exited.has(first)) first.postMessage(m);
  }

  /** Runs thread `w`'s quota store call `id` on the one memory quota store and posts the answer back. */
  #quota(w: Worker, id: number, call: QuotaCall): void {
    this.#quotaStore ??= new MemoryQuotaStore();
    this.#answer(
      w,
      answerQuotaCall(this.#quotaStore, call),
      (value) => ({ type: 'quota-result', id, value }),
      (error) => ({ type: 'quota-result', id, error }),
    );
  }

  /** Posts to thread `w`, unless it has exited, `ok` of what `work` gives or `failed` of its error's message. */
  #answer<T>(
    w: Worker,
    work: Promise<T>,
    ok: (value: T) => ToWorker,
    failed: (message: string) => ToWorker,
  ): void {
    work
      .then(ok, (e: unknown) => failed(String((e as Error)?.message ?? e)))
      .then((reply) => {
        if (!this.#exited.has(w)) w.postMessage(reply);
      });
  }

  /** Answers thread `w`'s scrape `id` with every live thread's series, aggregated. */
  #scrape(w: Worker, id: number): void {
    const parts = this.#gather((collection) => ({ type: 'collect', id: collection }));
    this.#answer(
      w,
      parts.then((all) =>
        aggregateThreadMetrics(
          all.map((m) => (m ?? []) as ThreadMetrics),
          this.#prefix,
        ),
      ),
      (text) => ({ type: 'scraped', id, text }),
      (error) => ({ type: 'scraped', id, error }),
    );
  }

  /** Has every thread but `w` forget `key`, then answers `w`'s request `id`: all confirmed, or which did not. */
  #forgetPeers(w: Worker, id: number, key: string): void {
    const confirmed = this.#gather((collection) => ({ type: 'forget', id: collection, key }), w).then(
      (all) => {
        const missing = all.flatMap((ok, index) => (ok === undefined ? [index] : []));
        if (missing.length > 0) {
          throw new Error(`thread ${missing.join(', ')} did not confirm the reset within ${COLLECT_MS} ms`);
        }
      },
    );
    this.#answer(
      w,
      confirmed,
      () => ({ type: 'peers-forgot', id }),
      (error) => ({ type: 'peers-forgot', id, error }),
    );
  }

  /**
   * Sends `message(collection)` to every live thread but `except` and resolves with each one's answer by thread
   * index; `null` for a thread skipped (`except`, or exited), `undefined` for one that did not answer in time.
   */
  #gather(message: (collection: number) => ToWorker, except?: Worker): Promise<unknown[]> {
    const collection = this.#collections++;
    const parts = this.#workers.map((t, index) => {
      if (t === except || this.#exited.has(t)) return Promise.resolve<unknown>(null);
      const key = `${collection}:${index}`;
      return new Promise<unknown>((resolve) => {
        // A thread that does not answer in time (busy, or stopping) is left out of this collection only.
        const timer = setTimeout(() => settle(undefined), COLLECT_MS);
        const settle = (answer: unknown) => {
          clearTimeout(timer);
          this.#collecting.delete(key);
          resolve(answer);
        };
        this.#collecting.set(key, settle);
        t.postMessage(message(collection));
      });
    });
    return Promise.all(parts);
  }
}
