import { Cluster, Redis } from 'ioredis';
import { createClient } from 'redis';
import { afterAll, beforeAll, expect } from 'vitest';
import {
  type RedisCluster,
  type RedisServer,
  startRedisCluster,
  startRedisServer,
} from '../../../../test/support/redis-server.js';
import type { RateLimitStore } from '../core/index.js';
import { storeConformance } from '../testing/index.js';
import { RedisStore } from './index.js';

let server: RedisServer;
let cluster: RedisCluster;
let single: Redis;
let clustered: Cluster;
let nodeRedis: ReturnType<typeof createClient>;
/** A client of a port nothing listens on, failing every call at once (no offline queue): Redis is down. */
let down: Redis;

beforeAll(async () => {
  [server, cluster] = await Promise.all([startRedisServer(), startRedisCluster()]);
  single = new Redis({ host: server.host, port: server.port, lazyConnect: true });
  clustered = new Cluster([...cluster.startupNodes]);
  nodeRedis = createClient({ url: server.url });
  await Promise.all([single.connect(), nodeRedis.connect()]);
  down = new Redis({ host: '127.0.0.1', port: 1, enableOfflineQueue: false, lazyConnect: true });
  down.on('error', () => {});
});

afterAll(async () => {
  down?.disconnect();
  await Promise.allSettled([single?.quit(), clustered?.quit(), nodeRedis?.quit()]);
  await Promise.allSettled([server?.stop(), cluster?.stop()]);
});

// A generous per-call timeout: these suites test the arithmetic, and a busy machine must not turn a slow answer
// into a failure-mode decision (the timeout itself is tested in redis-store.test.ts).
const timeoutMs = 10_000;

storeConformance(
  'redis (ioredis, single node)',
  (clock) => new RedisStore({ client: single, clock, timeoutMs, prefix: 'c1:' }),
);
storeConformance(
  'redis (ioredis, single node, no deny cache, no batching)',
  (clock) =>
    new RedisStore({
      client: single,
      clock,
      timeoutMs,
      prefix: 'c2:',
      denyCache: false,
      batch: { maxEntries: 1 },
    }),
);
storeConformance(
  'redis (node-redis, single node)',
  (clock) => new RedisStore({ client: nodeRedis, clock, timeoutMs }),
  {
    propertyRuns: 15,
  },
);
storeConformance(
  'redis (ioredis, three-master Cluster)',
  (clock) => new RedisStore({ client: clustered, clock, timeoutMs, prefix: 'cc:' }),
);

/**
 * The `local` failure mode while Redis is down, one node: the in-process fallback must decide exactly as every
 * store does (same decisions, same header values, same decision shape). Its `reset` resets the local buckets and
 * then reports that Redis's were not reset; the suite checks the local buckets, so the wrapper checks the report.
 */
function fallbackOnly(store: RedisStore): RateLimitStore {
  return {
    kind: store.kind,
    decide: (c, n) => store.decide(c, n),
    reserve: (c, n) => store.reserve(c, n),
    peek: (c, n) => store.peek(c, n),
    refund: (c, n) => store.refund(c, n),
    async reset(c) {
      await expect(store.reset(c)).rejects.toMatchObject({ code: 'ERR_STORE_UNAVAILABLE' });
    },
    close: () => store.close(),
  };
}
storeConformance('redis down, failure mode local (one node)', (clock) =>
  fallbackOnly(new RedisStore({ client: down, clock, failureMode: 'local', nodeCount: 1 })),
);
