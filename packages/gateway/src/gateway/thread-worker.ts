/**
 * One thread of `sluice serve --threads N` (see ThreadedGateway): resolves the configuration text the main
 * thread read, starts a gateway on the shared port with the shared table, and follows the main thread's reload
 * (with the text it read again) and close messages.
 */
import { type MessagePort, parentPort, workerData } from 'node:worker_threads';
import { SharedOverrides, SharedStore } from 'sluice/shared';
import { loadConfigText } from '../config/load-config.js';
import { redactUrls } from '../config/redact.js';
import { formatViolations } from '../config/violation.js';
import type { ThreadFeed } from '../dashboard/index.js';
import { createLogger } from '../log/create-logger.js';
import { ThreadQuotaStore } from '../quota/thread-quota-store.js';
import { Gateway } from './gateway.js';
import type { FromWorker, ThreadWorkerData, ToWorker } from './thread-messages.js';

if (parentPort === null) throw new Error('thread-worker runs as a worker thread of sluice serve --threads');
const port: MessagePort = parentPort;
const data = workerData as ThreadWorkerData;
const post = (m: FromWorker) => port.postMessage(m);

// Requests to the main thread, each answered by a message carrying its id.
const asked = new Map<number, { resolve: (value: unknown) => void; reject: (e: Error) => void }>();
let nextAsk = 0;
const ask = (message: (id: number) => FromWorker) =>
  new Promise<unknown>((resolve, reject) => {
    const id = nextAsk++;
    asked.set(id, { resolve, reject });
    post(message(id));
  });
const answered = (id: number, value: unknown, error: string | undefined) => {
  const pending = asked.get(id);
  asked.delete(id);
  if (error === undefined) pending?.resolve(value);
  else pending?.reject(new Error(error));
};
// `/metrics` on any thread answers for all of them: the main thread collects every thread's series.
const scrape = () => ask((id) => ({ type: 'scrape', id })) as Promise<string>;
// A reset of a key (the admin API, on the first thread) reaches every other thread's local caches before it answers.
const forgetOnPeers = async (key: string) => {
  await ask((id) => ({ type: 'forget-peers', id, key }));
};

// Quota usage kept in memory lives on the main thread, so that every thread counts into one store.
const quotaStore =
  data.table === undefined
    ? undefined
    : new ThreadQuotaStore((id, call) => post({ type: 'quota', id, call }));

async function start(): Promise<Gateway | undefined> {
  try {
    // The main thread read and validated the file: every thread starts from that one text.
    const loaded = loadConfigText(data.source, data.file, { overrides: data.overrides });
    if (!loaded.ok) throw new Error(formatViolations(data.file, loaded.violations));
    const config = loaded.config;
    const table = data.table;
    const store =
      table === undefined ? undefined : new SharedStore({ table, sweepIntervalMs: config.sweepIntervalMs });
    const gateway = await Gateway.start({
      config,
      configFile: data.file,
      overrides: data.overrides,
      // The main thread watches the file and hands every thread the text it read.
      watch: false,
      logger: createLogger(config.logging.level).child({ thread: data.index }),
      thread: {
        threads: data.threads,
        sideListeners: data.index === 0,
        scrape,
        forgetOnPeers,
        hashSecret: data.hashSecret,
        connections: data.connections,
        overloadCount: data.overloadCount,
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
    answered(m.id, m.text, m.text === undefined ? (m.error ?? 'no metrics') : undefined);
    return;
  }
  if (m.type === 'peers-forgot') {
    answered(m.id, undefined, m.error);
    return;
  }
  if (m.type === 'forget') {
    void started.then((g) => {
      g?.forgetKey(m.key);
      post({ type: 'forgotten', id: m.id });
    });
    return;
  }
  if (m.type === 'feed') {
    void started.then((g) => {
      g?.peers?.receive(m.source, m.feed);
      if (m.feed.facts !== undefined) g?.limitedKeyFacts.merge(m.feed.facts);
    });
    return;
  }
  if (m.type === 'quota-result') {
    quotaStore?.settle(m.id, m.value, m.error);
    return;
  }
  if (m.type === 'every-thread-listens') {
    void started.then((g) => {
      g?.everyThreadListens();
      post({ type: 'serving' });
    });
    return;
  }
  if (m.type === 'reload') {
    void started.then((g) => g?.reload(m.source));
    return;
  }
  // Closing the port lets the thread end once the gateway's listeners and timers are gone.
  void started.then(async (g) => {
    await g?.close();
    port.close();
  });
});
