import { Cluster, Redis } from 'ioredis';
import { createClient } from 'redis';
import { afterAll, beforeAll } from 'vitest';
import {
  type RedisCluster,
  type RedisServer,
  startRedisCluster,
  startRedisServer,
} from '../../../../test/support/redis-server.js';
import { storeConformance } from '../testing/index.js';
import { RedisStore } from './index.js';

let server: RedisServer;
let cluster: RedisCluster;
let single: Redis;
let clustered: Cluster;
let nodeRedis: ReturnType<typeof createClient>;

beforeAll(async () => {
  [server, cluster] = await Promise.all([startRedisServer(), startRedisCluster()]);
  single = new Redis({ host: server.host, port: server.port, lazyConnect: true });
  clustered = new Cluster([...cluster.startupNodes]);
  nodeRedis = createClient({ url: server.url });
  await Promise.all([single.connect(), nodeRedis.connect()]);
});

afterAll(async () => {
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
