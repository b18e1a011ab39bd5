import { readFileSync } from 'node:fs';

/** The cap on proxy connections when `server.maxConnections` is not set and the file limit allows it. */
export const MAX_CONNECTIONS_CEILING = 10_000;

/**
 * The share of the open file limit the proxy listener's connections may take by default. Each proxied
 * connection can hold a second descriptor for its upstream (an upgraded WebSocket always does), so half the
 * limit is the most the clients may take; the last tenth is left to the admin listener, the upstream pool, the
 * store and the log files.
 */
const SHARE_OF_LIMIT = 0.45;

/**
 * The soft limit on open file descriptors of this process, as Linux reports it in `/proc/self/limits` (Node.js
 * raises the soft limit to the hard one at start, so this is what the process really has).
 *
 * @param text - the file's text, for tests; read from `/proc/self/limits` when absent.
 * @returns the limit, or `undefined` where it cannot be read (not Linux) or is unlimited.
 */
export function openFileLimit(text?: string): number | undefined {
  let limits = text;
  if (limits === undefined) {
    try {
      limits = readFileSync('/proc/self/limits', 'utf8');
    } catch {
      return undefined;
    }
  }
  const soft = /^Max open files\s+(\d+)\s/m.exec(limits)?.[1];
  return soft === undefined ? undefined : Number(soft);
}

/**
 * The cap on the proxy listener's connections when `server.maxConnections` is not set: 45% of the open file
 * limit, at most 10,000 (at least 1), or 10,000 where the limit is unknown.
 *
 * @param limit - the open file limit, as {@link openFileLimit} reads it.
 */
export function defaultMaxConnections(limit: number | undefined): number {
  if (limit === undefined) return MAX_CONNECTIONS_CEILING;
  return Math.max(1, Math.min(MAX_CONNECTIONS_CEILING, Math.floor(limit * SHARE_OF_LIMIT)));
}

/**
 * Whether a cap leaves too few descriptors to the rest of the process: more than the default share of the
 * limit. The gateway warns at start; the cap still applies as written.
 *
 * @param cap - the cap in force (0: none).
 * @param limit - the open file limit, or `undefined` when unknown (never too high then).
 */
export function capExceedsFileLimit(cap: number, limit: number | undefined): boolean {
  return limit !== undefined && cap > 0 && cap > Math.floor(limit * SHARE_OF_LIMIT);
}
