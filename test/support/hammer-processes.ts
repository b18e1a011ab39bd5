/**
 * Starts the Node processes of the cross-process accuracy tests (each runs test/support/redis-hammer-worker.ts,
 * whose comment describes the arguments and the lines it prints) and reads their stdout line by line.
 *
 * @example
 * ```ts
 * const hammers = spawnHammers(4, [String(port), key, '1500', '4', '10', '1', '10']);
 * try {
 *   for (const h of hammers) expect(await h.next()).toBe('ready');
 *   for (const h of hammers) h.go();
 *   const results = await Promise.all(hammers.map(async (h) => JSON.parse(await h.next())));
 * } finally {
 *   for (const h of hammers) h.kill();
 * }
 * ```
 */
import { type ChildProcessByStdio, spawn } from 'node:child_process';
import type { Readable, Writable } from 'node:stream';
import { fileURLToPath } from 'node:url';

const WORKER = fileURLToPath(new URL('./redis-hammer-worker.ts', import.meta.url));

/** One running worker process. */
export interface Hammer {
  /** The next line it printed; rejects when it exited before printing one. */
  next(): Promise<string>;
  /** Tells it to start deciding. */
  go(): void;
  /** Ends the process (a no-op once it has exited). */
  kill(): void;
}

/** Starts `count` worker processes with the same arguments. */
export function spawnHammers(count: number, args: readonly string[]): Hammer[] {
  return Array.from({ length: count }, () => {
    const child = spawn(process.execPath, ['--import', 'tsx', WORKER, ...args], {
      stdio: ['pipe', 'pipe', 'inherit'],
    });
    const next = lines(child);
    return {
      next,
      go: () => child.stdin.write('go\n'),
      kill: () => child.kill(),
    };
  });
}

function lines(child: ChildProcessByStdio<Writable, Readable, null>): () => Promise<string> {
  let buffer = '';
  const queue: string[] = [];
  let wake: (() => void) | undefined;
  child.stdout.on('data', (chunk: Buffer) => {
    buffer += chunk.toString();
    for (let i = buffer.indexOf('\n'); i >= 0; i = buffer.indexOf('\n')) {
      queue.push(buffer.slice(0, i));
      buffer = buffer.slice(i + 1);
    }
    wake?.();
  });
  child.on('exit', () => wake?.());
  return async () => {
    while (queue.length === 0 && child.exitCode === null && child.signalCode === null) {
      await new Promise<void>((r) => (wake = r));
    }
    const value = queue.shift();
    if (value === undefined) throw new Error(`hammer worker exited (code ${child.exitCode}) without a line`);
    return value;
  };
}
