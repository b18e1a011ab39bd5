import { availableParallelism } from 'node:os';
import { MAX_THREADS } from '../config/value-ranges.js';

/** What `sluice serve --threads N` prints, on standard error, where it runs one thread instead. */
export const THREADS_UNSUPPORTED_MESSAGE =
  '--threads needs Node.js >= 22.12 on Linux (reusePort); running one thread';

/**
 * Whether the gateway can serve one port from several worker threads: each thread listens on the same address
 * with `reusePort` (SO_REUSEPORT, so the kernel spreads connections over the threads), which Node.js offers from
 * 22.12 and which only Linux balances that way. Elsewhere the listeners would clash or one would take everything.
 *
 * @param version - a Node.js version such as `22.12.0` (default this process's).
 * @param platform - a `process.platform` value (default this process's).
 */
export function threadsSupported(
  version: string = process.versions.node,
  platform: NodeJS.Platform = process.platform,
): boolean {
  if (platform !== 'linux') return false;
  const [major = 0, minor = 0] = version.split('.').map(Number);
  return major > 22 || (major === 22 && minor >= 12);
}

/**
 * The threads `sluice serve` runs without `--threads`: one per core the process may use where threads are
 * supported (as NGINX's `worker_processes auto`), at most `MAX_THREADS`, else one.
 *
 * @param supported - whether this Node.js and platform can serve one port from several threads.
 * @param cores - the cores available (default `os.availableParallelism()`).
 */
export function defaultThreads(
  supported: boolean = threadsSupported(),
  cores: number = availableParallelism(),
): number {
  return supported ? Math.min(MAX_THREADS, Math.max(1, cores)) : 1;
}
