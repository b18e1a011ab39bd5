/**
 * One thread of `sluice serve --threads N` (see ThreadedGateway): resolves the configuration file, starts a
 * gateway on the shared port with the shared table, and follows the main thread's reload and close messages.
 */
import { type MessagePort, parentPort, workerData } from 'node:worker_threads';
import { SharedStore } from 'sluice/shared';
import { loadConfigOrThrow } from '../config/load-config.js';
import { redactUrls } from '../config/redact.js';
import { createLogger } from '../log/create-logger.js';
import { Gateway } from './gateway.js';
import type { FromWorker, ThreadWorkerData, ToWorker } from './thread-main.js';

if (parentPort === null) throw new Error('thread-worker runs as a worker thread of sluice serve --threads');
const port: MessagePort = parentPort;
const data = workerData as ThreadWorkerData;
const post = (m: FromWorker) => port.postMessage(m);

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
        sideListeners: data.index === 0,
        ...(store === undefined
          ? {}
          : { store: { store, close: async () => store.close(), ready: async () => true } }),
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
