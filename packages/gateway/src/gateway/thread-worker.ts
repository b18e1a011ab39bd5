/**
 * One thread of `sluice serve --threads N` (see ThreadedGateway): resolves the configuration file, starts a
 * gateway on the shared port with the shared table, and follows the main thread's reload and close messages.
 */
import { type MessagePort, parentPort, workerData } from 'node:worker_threads';
import { SharedOverrides, SharedStore } from 'sluice/shared';
import { loadConfigOrThrow } from '../config/load-config.js';
import { redactUrls } from '../config/redact.js';
import type { ThreadFeed } from '../dashboard/index.js';
import { createLogger } from '../log/create-logger.js';
import { ThreadQuotaStore } from '../quota/thread-quota-store.js';
import { Gateway } from './gateway.js';
import type { FromWorker, ThreadWorkerData, ToWorker } from './thread-main.js';

if (parentPort === null) throw new Error('thread-worker runs as a worker thread of sluice serve --threads');
const port: MessagePort = parentPort;
const data = workerData as ThreadWorkerData;
const post = (m: FromWorker) => port.postMessage(m);

// `/metrics` on any thread answers for all of them: the main thread collects every thread's series.
const scrapes = new Map<number, { resolve: (text: string) => void; reject: (e: Error) => void }>();
let nextScrape = 0;
const scrape = () =>
  new Promise<string>((resolve, reject) => {
    const id = nextScrape++;
    scrapes.set(id, { resolve, reject });
    post({ type: 'scrape', id });
  });

// Quota usage kept in memory lives on the main thread, so that every thread counts into one store.
const quotaStore =
  data.table === undefined
    ? undefined
    : new ThreadQuotaStore((id, call) => post({ type: 'quota', id, call }));

async function start(): Promise<Gateway | undefined> {
  try {
    const config = loadConfigOrThrow(data.file, { overrides: data.overrides });
    const table = data.table;
    const store =
      table === undefined ? undefined : new SharedStore({ table, sweepIntervalMs: config.sweepIntervalMs });
    const gateway = await Gateway.start({
      config,
      configFile: data.file,
      overrides: data.overrides,
      logger: createLogger(config.logging.level).child({ thread: data.index }),
      thread: {
        threads: data.threads,
        sideListeners: data.index === 0,
        scrape,
        hashSecret: data.hashSecret,
        // The first thread serves the dashboard and the admin API: the others feed it what they keep alone
        // (only when there is an admin listener to show it: it needs a restart to appear).
        ...(data.index === 0
          ? { collectsFeeds: data.threads > 1 }
          : config.admin === undefined
            ? {}
            : { publish: (feed: ThreadFeed) => post({ type: 'feed', feed }) }),
        ...(quotaStore === undefined ? {} : { quotaStore }),
        ...(store === undefined
          ? {}
          : {
              store: {
                store,
                overrideStore: new SharedOverrides({ buffer: data.overrideBuffer as SharedArrayBuffer }),
                close: async () => store.close(),
                ready: async () => true,
              },
            }),
      },
    });
    post({ type: 'listening', url: gateway.url });
    return gateway;
  } catch (e) {
    post({ type: 'failed', message: redactUrls((e as Error).message) });
    port.close();
    return undefined;
  }
}

const started = start();

port.on('message', (m: ToWorker) => {
  if (m.type === 'collect') {
    void started.then(async (g) => {
      post({
        type: 'collected',
        id: m.id,
        metrics: g === undefined ? [] : await g.metrics.registry.getMetricsAsJSON(),
      });
    });
    return;
  }
  if (m.type === 'scraped') {
    const pending = scrapes.get(m.id);
    scrapes.delete(m.id);
    if (m.text !== undefined) pending?.resolve(m.text);
    else pending?.reject(new Error(m.error ?? 'no metrics'));
    return;
  }
  if (m.type === 'feed') {
    void started.then((g) => g?.peers?.receive(m.source, m.feed));
    return;
  }
  if (m.type === 'quota-result') {
    quotaStore?.settle(m.id, m.value, m.error);
    return;
  }
  if (m.type === 'reload') {
    void started.then((g) => g?.reload());
    return;
  }
  // Closing the port lets the thread end once the gateway's listeners and timers are gone.
  void started.then(async (g) => {
    await g?.close();
    port.close();
  });
});
