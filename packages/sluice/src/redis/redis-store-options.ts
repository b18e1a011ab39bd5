import {
  type Clock,
  ErrorCode,
  integerOption,
  invalidOption,
  objectOption,
  rejectUnknownKeys,
  SluiceError,
} from '../core/index.js';
import { type RedisScriptClient, toScriptClient } from './client-adapter.js';
import type { FailureMode } from './failure-mode.js';
import type { HashTagFunction } from './key-layout.js';
import type { StoreLogger } from './store-events.js';

/** Options of {@link RedisStore}. */
export interface RedisStoreOptions {
  /**
   * The connection: an ioredis `Redis` (single node or Sentinel) or `Cluster`, a connected node-redis client or
   * cluster, or an adapter from `ioredisClient` / `nodeRedisClient`. The store does not close it.
   */
  readonly client: unknown;
  /** Prepended to every key (white label). No braces. Default `rl:`. */
  readonly prefix?: string;
  /** Derives the Cluster hash tag from a key; default: the key itself (see KeyLayout). */
  readonly hashTag?: HashTagFunction;
  /**
   * Time source. Omitted (the default): the Redis server's `TIME`, so node clocks do not matter. Given: this
   * clock's readings are sent with each call (tests with `ManualClock`, simulations); key TTLs then get one
   * extra minute, because such a clock need not run at the server's pace.
   */
  readonly clock?: Clock;
  /** Per-call timeout in milliseconds; a call that takes longer follows the failure mode. Default 50. */
  readonly timeoutMs?: number;
  /** See {@link FailureMode}. Default `local`. */
  readonly failureMode?: FailureMode;
  /** Nodes sharing the limits, for the `local` failure mode. Integer >= 1, default 1. */
  readonly nodeCount?: number;
  /** The local deny cache: `true` (default), `false`, or `{ maxEntries }` (default 10,000). */
  readonly denyCache?: boolean | { readonly maxEntries?: number };
  /** Batching of concurrent calls into one script call per slot. */
  readonly batch?: {
    /** Most entries per script call. Default 64. */
    readonly maxEntries?: number;
    /** Script calls in flight at once; later calls queue and share the next one. Default 8. */
    readonly maxInFlight?: number;
  };
  /** The breaker that stops calling a failing Redis and probes it. */
  readonly breaker?: {
    /** Consecutive failed calls that switch to the failure mode. Default 3. */
    readonly failureThreshold?: number;
    /** Milliseconds between probes while switched; decisions return within about this after Redis does. Default 250. */
    readonly probeIntervalMs?: number;
  };
  /**
   * How long the slots of a concurrency policy that this store holds outlive its last renewal, in milliseconds
   * (integer from 1,000 to 3,600,000, default 5,000). The store renews them every third of it, with one timer; the
   * slots of a store that crashed or lost Redis come back to the others within this time.
   */
  readonly leaseTimeMs?: number;
  /**
   * Where to write one warn-level line on entering the failure mode and one on leaving it (pino fits as it is).
   * Default: no lines; the `failover` and `recover` events fire either way.
   */
  readonly logger?: StoreLogger;
}

/** Validated, frozen options. */
export interface ResolvedRedisStoreOptions {
  readonly client: RedisScriptClient;
  readonly prefix: string;
  readonly hashTag: HashTagFunction | undefined;
  readonly clock: Clock | undefined;
  readonly timeoutMs: number;
  readonly failureMode: FailureMode;
  readonly nodeCount: number;
  readonly denyCacheEntries: number;
  readonly batchMaxEntries: number;
  readonly batchMaxInFlight: number;
  readonly failureThreshold: number;
  readonly probeIntervalMs: number;
  readonly leaseTimeMs: number;
  readonly logger: StoreLogger | undefined;
}

const KNOWN = [
  'client',
  'prefix',
  'hashTag',
  'clock',
  'timeoutMs',
  'failureMode',
  'nodeCount',
  'denyCache',
  'batch',
  'breaker',
  'leaseTimeMs',
  'logger',
];

/**
 * Validates {@link RedisStoreOptions} and applies defaults.
 *
 * @throws SluiceError `ERR_INVALID_OPTION` naming the option, the expectation and the given value.
 */
export function resolveRedisStoreOptions(options: RedisStoreOptions): ResolvedRedisStoreOptions {
  const o = objectOption('RedisStore options', options);
  rejectUnknownKeys('RedisStore options', o, KNOWN);
  const client = toScriptClient(o.client);
  const prefix = o.prefix === undefined ? 'rl:' : o.prefix;
  if (typeof prefix !== 'string') throw invalidOption('prefix', 'a string', prefix);
  if (o.hashTag !== undefined && typeof o.hashTag !== 'function') {
    throw invalidOption('hashTag', 'a function (key) => tag', o.hashTag);
  }
  const clock = o.clock as Clock | undefined;
  if (
    clock !== undefined &&
    (typeof clock !== 'object' || clock === null || typeof clock.now !== 'function')
  ) {
    throw new SluiceError(ErrorCode.InvalidOption, 'clock must have a now() method', { option: 'clock' });
  }
  const failureMode = o.failureMode ?? 'local';
  if (failureMode !== 'open' && failureMode !== 'closed' && failureMode !== 'local') {
    throw invalidOption('failureMode', "one of 'open', 'closed', 'local'", failureMode);
  }
  let denyCacheEntries = 10_000;
  if (o.denyCache === false) denyCacheEntries = 0;
  else if (typeof o.denyCache === 'object' && o.denyCache !== null && !Array.isArray(o.denyCache)) {
    const d = o.denyCache as Record<string, unknown>;
    rejectUnknownKeys('denyCache', d, ['maxEntries']);
    denyCacheEntries = integerOption('denyCache.maxEntries', d.maxEntries, 1, 2 ** 24, 10_000);
  } else if (o.denyCache !== undefined && o.denyCache !== true) {
    throw invalidOption('denyCache', 'true, false or { maxEntries }', o.denyCache);
  }
  const logger = o.logger as StoreLogger | undefined;
  if (
    logger !== undefined &&
    (typeof logger !== 'object' || logger === null || typeof logger.warn !== 'function')
  ) {
    throw invalidOption('logger', 'an object with a warn(fields, message) method (pino fits)', logger);
  }
  const batch = o.batch === undefined ? {} : objectOption('batch', o.batch);
  rejectUnknownKeys('batch', batch, ['maxEntries', 'maxInFlight']);
  const breaker = o.breaker === undefined ? {} : objectOption('breaker', o.breaker);
  rejectUnknownKeys('breaker', breaker, ['failureThreshold', 'probeIntervalMs']);
  return Object.freeze({
    client,
    prefix,
    hashTag: o.hashTag as HashTagFunction | undefined,
    clock,
    timeoutMs: integerOption('timeoutMs', o.timeoutMs, 1, 60_000, 50),
    failureMode,
    nodeCount: integerOption('nodeCount', o.nodeCount, 1, 100_000, 1),
    denyCacheEntries,
    batchMaxEntries: integerOption('batch.maxEntries', batch.maxEntries, 1, 10_000, 64),
    batchMaxInFlight: integerOption('batch.maxInFlight', batch.maxInFlight, 1, 1024, 8),
    failureThreshold: integerOption('breaker.failureThreshold', breaker.failureThreshold, 1, 1_000_000, 3),
    probeIntervalMs: integerOption('breaker.probeIntervalMs', breaker.probeIntervalMs, 1, 3_600_000, 250),
    leaseTimeMs: integerOption('leaseTimeMs', o.leaseTimeMs, 1_000, 3_600_000, 5_000),
    logger,
  });
}
