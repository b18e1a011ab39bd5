import { invalidOption } from '../core/index.js';

/**
 * The few Redis operations the store needs, so that any client fits behind a small adapter. The store never
 * imports a Redis client: ioredis and node-redis are optional peer dependencies, passed in by the application.
 */
export interface RedisScriptClient {
  /** Which library the adapter wraps, for logs. */
  readonly library: string;
  /** True for a Redis Cluster client: the store then groups calls by slot. */
  readonly cluster: boolean;
  /** EVALSHA; rejects with an error whose message starts with `NOSCRIPT` when the server lacks the script. */
  evalsha(sha: string, keys: string[], args: string[]): Promise<unknown>;
  /** EVAL: runs and caches the script (the NOSCRIPT recovery path). */
  eval(script: string, keys: string[], args: string[]): Promise<unknown>;
  /** A cheap round trip the breaker uses to probe a server it had given up on. */
  ping(): Promise<unknown>;
  /**
   * Optional: loads a script into the server's cache (SCRIPT LOAD; on a Cluster, on every master), so that the
   * first calls after a connection opens need no NOSCRIPT round trip (a restarted server's cache is empty).
   */
  loadScript?(script: string): Promise<unknown>;
  /**
   * Optional: calls `listener` each time the connection opens again (ioredis `ready`), so that the store warms a
   * restarted server and forgets its failures while no request comes; returns a function that stops it.
   */
  onConnect?(listener: () => void): () => void;
}

/** The part of an ioredis `Redis` or `Cluster` instance the adapter uses (structural: ioredis is not imported). */
export interface IoredisLike {
  evalsha(sha: string, numKeys: number, ...keysAndArgs: string[]): Promise<unknown>;
  eval(script: string, numKeys: number, ...keysAndArgs: string[]): Promise<unknown>;
  ping(): Promise<unknown>;
  readonly isCluster?: boolean;
  script?(subcommand: 'LOAD', script: string): Promise<unknown>;
  nodes?(role: 'master'): IoredisLike[];
  on?(event: 'ready', listener: () => void): unknown;
  off?(event: 'ready', listener: () => void): unknown;
}

/** The part of a node-redis client or cluster the adapter uses (structural: redis is not imported). */
export interface NodeRedisLike {
  evalSha(sha: string, options: { keys: string[]; arguments: string[] }): Promise<unknown>;
  eval(script: string, options: { keys: string[]; arguments: string[] }): Promise<unknown>;
  sendCommand?: unknown;
}

/**
 * Wraps an ioredis client: `new Redis(...)` (single node or Sentinel: `new Redis({ sentinels, name })`) or
 * `new Cluster([...])`.
 *
 * @example
 * ```ts
 * import { Redis } from 'ioredis';
 * const store = new RedisStore({ client: ioredisClient(new Redis({ enableOfflineQueue: false })) });
 * ```
 */
export function ioredisClient(client: IoredisLike): RedisScriptClient {
  const cluster = client.isCluster === true;
  const load = (c: IoredisLike, script: string) =>
    c.script === undefined ? Promise.resolve() : c.script('LOAD', script);
  return {
    library: 'ioredis',
    cluster,
    evalsha: (sha, keys, args) => client.evalsha(sha, keys.length, ...keys, ...args),
    eval: (script, keys, args) => client.eval(script, keys.length, ...keys, ...args),
    ping: () => client.ping(),
    // Every master of a Cluster keeps a cache of its own.
    loadScript: (script) =>
      cluster && client.nodes !== undefined
        ? Promise.all(client.nodes('master').map((n) => load(n, script)))
        : load(client, script),
    onConnect: (listener) => {
      client.on?.('ready', listener);
      return () => void client.off?.('ready', listener);
    },
  };
}

/**
 * Wraps a node-redis client (`createClient()`, connected) or cluster (`createCluster()`, connected).
 *
 * @param client - the connected client.
 * @param options - `cluster: true` for a `createCluster()` instance (detected when omitted).
 */
export function nodeRedisClient(
  client: NodeRedisLike,
  options: { cluster?: boolean } = {},
): RedisScriptClient {
  const cluster = options.cluster ?? isNodeRedisCluster(client);
  return {
    library: 'node-redis',
    cluster,
    evalsha: (sha, keys, args) => client.evalSha(sha, { keys, arguments: args }),
    eval: (script, keys, args) => client.eval(script, { keys, arguments: args }),
    ping: () =>
      // A cluster has no PING of its own: run the cheapest script-free command on a keyed route.
      cluster
        ? client.eval('return 1', { keys: ['sluice-probe'], arguments: [] })
        : (client as unknown as { ping(): Promise<unknown> }).ping(),
  };
}

function isNodeRedisCluster(client: NodeRedisLike): boolean {
  const c = client as unknown as Record<string, unknown>;
  return typeof c.getMasters === 'function' || 'masters' in c || typeof c.nodeClient === 'function';
}

/**
 * Accepts an adapter, an ioredis client or a node-redis client, and returns an adapter.
 *
 * @throws SluiceError `ERR_INVALID_OPTION` for anything else.
 */
export function toScriptClient(client: unknown): RedisScriptClient {
  if (typeof client === 'object' && client !== null) {
    const c = client as Record<string, unknown>;
    if (typeof c.evalsha === 'function' && typeof c.library === 'string') return client as RedisScriptClient;
    if (typeof c.evalsha === 'function' && typeof c.eval === 'function')
      return ioredisClient(client as IoredisLike);
    if (typeof c.evalSha === 'function' && typeof c.eval === 'function') {
      return nodeRedisClient(client as NodeRedisLike);
    }
  }
  throw invalidOption(
    'client',
    'an ioredis Redis or Cluster, a node-redis client or cluster, or a RedisScriptClient adapter',
    client,
  );
}
