import type { ChildProcess } from 'node:child_process';
import { afterAll, beforeAll } from 'vitest';
import { compiledSluice } from './compiled-sluice.js';
import { startUpstream, type TestUpstream, tempDir } from './support.js';

/** What a suite that spawns `sluice serve` shares between its tests. */
export interface SpawnSuite {
  /** A temporary folder for configuration files, removed at the end of the suite. */
  readonly tmp: { readonly dir: string; readonly cleanup: () => void };
  /** The children spawned (see `spawnSluice`): whatever a failed assertion left running is killed at the end. */
  readonly spawned: ChildProcess[];
  /** The upstream every gateway of the suite forwards to, started before the first test. */
  readonly upstream: TestUpstream;
  /**
   * The `sluice` command compiled from the sources once for the suite (see `compiledSluice`), for `spawnSluice`: a
   * threaded gateway starts in a fraction of the time it takes through tsx.
   */
  readonly bin: string;
}

/**
 * Registers the hooks of a suite that spawns `sluice serve` in front of one upstream: starts the upstream and
 * compiles the command before the first test, and at the end kills every child still running, closes the upstream
 * and removes the folder and the compiled command.
 */
export function spawnSuite(): SpawnSuite {
  const tmp = tempDir();
  const spawned: ChildProcess[] = [];
  let upstream: TestUpstream | undefined;
  let compiled: Awaited<ReturnType<typeof compiledSluice>> | undefined;
  beforeAll(async () => {
    [upstream, compiled] = await Promise.all([startUpstream(), compiledSluice()]);
  });
  afterAll(async () => {
    for (const c of spawned) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
    await upstream?.close();
    compiled?.remove();
    tmp.cleanup();
  });
  return {
    tmp,
    spawned,
    get upstream(): TestUpstream {
      if (upstream === undefined) throw new Error('the upstream starts in beforeAll: read it inside a test');
      return upstream;
    },
    get bin(): string {
      if (compiled === undefined)
        throw new Error('the command is compiled in beforeAll: read it inside a test');
      return compiled.bin;
    },
  };
}
