import { Cluster, Redis, type RedisOptions } from 'ioredis';
import type { Clock, OverrideStore, RateLimitStore } from 'sluice';
import { MemoryOverrides, MemoryStore } from 'sluice/memory';
import { RedisOverrides, RedisStore, reconnectBackoff } from 'sluice/redis';
import type { GatewayConfig } from '../config/gateway-config.js';
import { untilFirstConnection } from './first-connection.js';

/** A store and how to release what was opened for it. */
export interface OpenedStore {
  readonly store: RateLimitStore;
  /**
   * Where run-time overrides and blocks live, beside the buckets: in process with the memory store, in the
   * shared buffer with threads, in Redis (every gateway on it) with Redis.
   */
  readonly overrideStore: OverrideStore;
  /** The Redis connection of a Redis store, shared with quota tracking; `undefined` for memory. */
  readonly redis?: Redis | Cluster;
  /** Closes the store and the Redis connection the gateway opened. */
  close(): Promise<void>;
  /**
   * Resolves true once the store can answer and its overrides and blocks are read (at once for memory; with Redis,
   * the first connection ready and the rules read from it), false when `waitMs` passed first. The gateway waits
   * for it before listening, so its first requests are decided by Redis rather than by the failure mode while the
   * connection is still being opened, and meet every block an operator set (D-G77).
   */
  ready(waitMs: number): Promise<boolean>;
}

/** How long the gateway's Redis clients wait for a connection to open before trying again. */
export const REDIS_CONNECT_TIMEOUT_MS = 1000;

/**
 * The reconnect schedule of the gateway's Redis clients: 50 ms doubling to 500 ms, for ever. How soon a client is
 * connected again after Redis returns bounds how soon decisions come from Redis again (the store's breaker adds at
 * most one probe interval); ioredis's default backs off to 2 s.
 */
export const redisReconnect = reconnectBackoff({ initialMs: 50, maxMs: 500 });

/**
 * The ioredis settings of every gateway connection (sluice/redis README, "Recommended ioredis settings"): no
 * offline queue and no resending after a reconnect, so that during an outage a call fails at once and follows
 * the failure mode instead of waiting in the client and taking tokens late; a connect timeout; the bounded
 * reconnect backoff.
 */
export function redisClientOptions(): RedisOptions {
  return {
    lazyConnect: false,
    enableOfflineQueue: false,
    autoResendUnfulfilledCommands: false,
    maxRetriesPerRequest: 1,
    connectTimeout: REDIS_CONNECT_TIMEOUT_MS,
    retryStrategy: redisReconnect,
  };
}

/**
 * Opens the configured store: a `MemoryStore` bounded by `ratelimit.max_tracked_keys` and swept every
 * `ratelimit.sweep_interval`, or a `RedisStore` over an ioredis client for a single node (`url`), a Redis
 * Cluster (`cluster.nodes`) or Sentinel (`sentinel`), with `store.failureMode`, `store.timeout` and
 * `store.nodeCount`.
 *
 * @param config - the resolved configuration.
 * @param clock - the time source for the memory store (a `ManualClock` in tests); Redis uses its server clock.
 * @param threads - threads of this process that each open a store (`sluice serve --threads`): with Redis, each
 * thread's local failure mode is a share of the node's, so `local` divides by `nodeCount x threads`.
 * @param now - the wall clock overrides expire by (epoch milliseconds).
 */
export function createStore(
  config: GatewayConfig,
  clock?: Clock,
  threads = 1,
  now: () => number = Date.now,
): OpenedStore {
  if (config.store.type === 'memory') {
    const store = new MemoryStore({
      maxTrackedKeys: config.maxTrackedKeys,
      sweepIntervalMs: config.sweepIntervalMs,
      ...(clock === undefined ? {} : { clock }),
    });
    const overrideStore = new MemoryOverrides(now);
    return { store, overrideStore, close: async () => store.close(), ready: async () => true };
  }
  const r = config.store.redis;
  if (r === undefined) throw new Error('store.type redis without connection settings');
  const common = redisClientOptions();
  let client: Redis | Cluster;
  if (r.clusterNodes !== undefined) {
    client = new Cluster(
      r.clusterNodes.map((u) => {
        const url = new URL(u);
        return { host: url.hostname, port: Number(url.port || 6379) };
      }),
      {
        enableOfflineQueue: false,
        clusterRetryStrategy: redisReconnect,
        redisOptions: { ...common, password: passwordOf(r.clusterNodes[0]) },
      },
    );
  } else if (r.sentinel !== undefined) {
    client = new Redis({
      ...common,
      name: r.sentinel.name,
      sentinels: r.sentinel.nodes.map((n) => {
        const i = n.lastIndexOf(':');
        return { host: n.slice(0, i), port: Number(n.slice(i + 1)) };
      }),
      sentinelRetryStrategy: redisReconnect,
      password: r.sentinel.password,
    });
  } else {
    client = new Redis(r.url as string, common);
  }
  // ioredis reports connection trouble as events; the store's failure mode decides what requests see, and
  // observeStore logs the switches.
  client.on('error', () => undefined);
  const prefix = config.keys.prefix === '' ? 'rl:' : config.keys.prefix;
  const store = new RedisStore({
    client: untilFirstConnection(client, config.store.timeoutMs),
    prefix,
    failureMode: config.store.failureMode,
    timeoutMs: config.store.timeoutMs,
    nodeCount: config.store.nodeCount * threads,
    leaseTimeMs: config.store.leaseTimeMs,
  });
  const overrideStore = new RedisOverrides({
    client,
    prefix,
    wallClock: now,
  });
  return {
    store,
    overrideStore,
    redis: client,
    close: async () => {
      overrideStore.close();
      await store.close();
      client.disconnect();
    },
    ready: (waitMs) => readyWithRules(client, overrideStore, waitMs),
  };
}

/** Milliseconds between two reads of the rules while the first connection is being opened. */
const RULES_RETRY_MS = 20;

/**
 * The first connection ready, then the rules read through it: the reads in the background (every 250 ms) could
 * leave the first requests after start without the blocks in Redis, since the read made before the connection
 * opened fails at once (no offline queue).
 */
async function readyWithRules(
  client: Redis | Cluster,
  rules: RedisOverrides,
  waitMs: number,
): Promise<boolean> {
  const deadline = Date.now() + waitMs;
  if (!(await firstReady(client, waitMs))) return false;
  for (;;) {
    await rules.refresh();
    if (rules.loaded) return true;
    if (Date.now() + RULES_RETRY_MS > deadline) return false;
    await new Promise((r) => setTimeout(r, RULES_RETRY_MS));
  }
}

function firstReady(client: Redis | Cluster, waitMs: number): Promise<boolean> {
  if (client.status === 'ready') return Promise.resolve(true);
  return new Promise((resolve) => {
    const timer = setTimeout(() => {
      client.off('ready', onReady);
      resolve(false);
    }, waitMs);
    const onReady = () => {
      clearTimeout(timer);
      resolve(true);
    };
    client.once('ready', onReady);
  });
}

function passwordOf(url: string): string | undefined {
  const p = new URL(url).password;
  return p === '' ? undefined : decodeURIComponent(p);
}
