import { type ChildProcess, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { nodeLine } from '../../../scripts/node-line.mjs';
import { watchConfigFile } from '../src/gateway/config-watch.js';
import { threadsSupported } from '../src/gateway/threads-support.js';
import { createLogger } from '../src/log/create-logger.js';
import { compiledSluice } from './compiled-sluice.js';
import { serveArgs, spawnSluice, startUpstream, type TestUpstream, tempDir } from './support.js';

// `reload.watch` promises a reload whenever the file changes after the gateway read it. With several threads the
// first one answers before the others listen, and a save made then must not fall between the read and the watch.

const tmp = tempDir();
const spawned: ChildProcess[] = [];
let upstream: TestUpstream;
/** The command compiled from the sources once: each `sluice` started below starts faster than through tsx. */
let compiled: Awaited<ReturnType<typeof compiledSluice>>;

beforeAll(async () => {
  [upstream, compiled] = await Promise.all([startUpstream(), compiledSluice()]);
  threadedNode();
}, 180_000);
afterAll(async () => {
  for (const c of spawned) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
  await upstream.close();
  compiled?.remove();
  tmp.cleanup();
});

/** A Node.js binary with reusePort: this one when it has it, else Node.js 24 from the cache of node-line. */
function threadedNode(): string {
  if (threadsSupported()) return process.execPath;
  const node = join(nodeLine('24', { stdio: 'ignore' }), 'node');
  const v = spawnSync(node, ['-p', 'process.versions.node'], { encoding: 'utf8' }).stdout.trim();
  if (!threadsSupported(v)) throw new Error(`${node} is Node.js ${v}, without reusePort`);
  return node;
}

const config = (burst: number) =>
  `rateLimiting:\n  defaultTier: t\n  tiers:\n    t: { requestsPerMinute: 60, burstLimit: ${burst} }\n`;
const version = (text: string) => createHash('sha256').update(text).digest('hex').slice(0, 12);

describe('a configuration saved while the gateway starts', () => {
  it('is reloaded on every thread when saved as soon as the first thread listens', async () => {
    const file = join(tmp.dir, 'start-save.yaml');
    writeFileSync(file, config(5));
    const p = spawnSluice(threadedNode(), serveArgs(file, upstream.url, 2), spawned, compiled.bin);
    // The first thread listens (and answers /health) while the second one is still starting.
    await p.waitFor(/"thread":0.*sluice gateway listening/);
    const next = config(9);
    writeFileSync(file, next);
    for (const i of [0, 1])
      await p.waitFor(new RegExp(`"thread":${i}.*"version":"${version(next)}".*configuration reloaded`));
    p.child.kill('SIGTERM');
    expect(await p.exited).toBe(0);
  });

  it('the watch reports a file that differs from the text loaded before it attached, without any event', async () => {
    const file = join(tmp.dir, 'differs.yaml');
    writeFileSync(file, config(7));
    let stop = (): void => undefined;
    await new Promise<void>((resolve) => {
      stop = watchConfigFile(file, resolve, createLogger('silent'), config(5));
    });
    stop();
  });
});
