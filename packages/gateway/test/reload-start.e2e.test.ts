import { once } from 'node:events';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, afterEach, describe, expect, it, vi } from 'vitest';
import { main } from '../src/cli/main.js';
import { loadConfigOrThrow } from '../src/config/load-config.js';
import { Gateway, type ReloadResult } from '../src/gateway/gateway.js';
import { createLogger } from '../src/log/create-logger.js';
import { client, send, startUpstream, tempDir } from './support.js';

// `reload.watch` promises a reload whenever the file changes after the gateway read it. The single-thread
// gateway reads the file, then opens the store and listens, and only then attaches the watch: a save made in
// between must not be lost. Each test saves the file at a chosen step of that window, no timing involved.

const tmp = tempDir();
const agent = client();
const upstream = await startUpstream();
const started: Gateway[] = [];

afterEach(async () => {
  vi.restoreAllMocks();
  for (const g of started.splice(0)) await g.close();
});
afterAll(async () => {
  await upstream.close();
  await agent.close();
  tmp.cleanup();
});

const config = (burst: number) =>
  `rateLimiting:\n  defaultTier: t\n  tiers:\n    t: { requestsPerMinute: 60, burstLimit: ${burst} }\nreload: { watch: true }\n`;

/** The gateway's first reload, which must be a valid one. */
async function reloaded(g: Gateway): Promise<void> {
  const [result] = (await once(g, 'reload')) as [ReloadResult];
  expect(result.ok).toBe(true);
}

describe('a configuration saved between the read and the watch of a single-thread gateway', () => {
  it('is applied when saved before Gateway.start, after the file was loaded', async () => {
    const file = join(tmp.dir, 'library.yaml');
    writeFileSync(file, config(4));
    const overrides = { port: 0, host: '127.0.0.1', upstream: upstream.url };
    const loaded = loadConfigOrThrow(file, { overrides });
    writeFileSync(file, config(9));
    const g = await Gateway.start({ config: loaded, overrides, logger: createLogger('silent') });
    started.push(g);
    await reloaded(g);
    // The tier changed, so its policy is new and starts full: 9 - 1.
    expect((await send(agent, `${g.url}/x`)).headers.ratelimit).toBe('"t";r=8;t=1');
  });

  it('is applied by sluice serve --threads 1 when saved as the gateway starts', async () => {
    const file = join(tmp.dir, 'serve.yaml');
    writeFileSync(file, config(4));
    const start = Gateway.start.bind(Gateway);
    let gateway: Promise<Gateway> | undefined;
    // The step between the command's read of the file and the gateway's start: the save happens there.
    vi.spyOn(Gateway, 'start').mockImplementation((options) => {
      writeFileSync(file, config(9));
      gateway = start({ ...options, logger: createLogger('silent') });
      return gateway;
    });
    const signals = new Map<string, () => void>();
    const io = {
      out: () => undefined,
      err: () => undefined,
      onSignal: (signal: string, handler: () => void) => {
        signals.set(signal, handler);
        return () => signals.delete(signal);
      },
    };
    const code = main(
      ['serve', '--config', file, '--upstream', upstream.url, '--port', '0', '--threads', '1'],
      io,
    );
    await vi.waitUntil(() => gateway);
    const g = await (gateway as Promise<Gateway>);
    started.push(g);
    await reloaded(g);
    expect((await send(agent, `${g.url}/x`)).headers.ratelimit).toBe('"t";r=8;t=1');
    signals.get('SIGTERM')?.();
    expect(await code).toBe(0);
  });
});
