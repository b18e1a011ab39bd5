import { once } from 'node:events';
import { Cluster, Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  REDIS_HOST,
  type RedisCluster,
  type RedisServer,
  redisCli,
  startRedisCluster,
  startRedisServer,
} from '../../../../test/support/redis-server.js';
import { ManualClock, type SluiceError } from '../core/index.js';
import { QuotaTracker } from './quota-tracker.js';
import type { QuotaAlert } from './quota-tracker-options.js';
import { RedisQuotaStore } from './redis-quota-store.js';

// Wall time in the future of the real clock, so that EXPIREAT (evaluated by the server's clock) keeps the keys.
const T0 = (Math.floor(Date.now() / 3_600_000) + 1) * 3_600_000;

let server: RedisServer;
let redis: Redis;
let prefixes = 0;

beforeAll(async () => {
  server = await startRedisServer();
  redis = new Redis(server.port, REDIS_HOST, { enableOfflineQueue: false, maxRetriesPerRequest: 0 });
  await once(redis, 'ready');
});

afterAll(async () => {
  redis?.disconnect();
  await server?.stop();
});

function tracker(options: ConstructorParameters<typeof QuotaTracker>[0] = {}, client: Redis = redis) {
  const keyPrefix = `t${++prefixes}:quota:`;
  const clock = new ManualClock(T0);
  const alerts: QuotaAlert[] = [];
  const store = new RedisQuotaStore({ client, keyPrefix });
  const q = new QuotaTracker({ store, clock, flushIntervalMs: 0, ...options });
  q.on('alert', (a: QuotaAlert) => alerts.push(a));
  return { q, clock, alerts, store, keyPrefix };
}

describe('RedisQuotaStore against a real redis-server', () => {
  it('keeps usage per tenant x category x bucket under the key prefix with the configured TTL', async () => {
    const { q, keyPrefix } = tracker({ quotas: { acme: 100 } });
    q.record('acme', 'read', 3);
    q.record('acme', 'simulation', 2);
    q.record('globex', 'read', 9);
    expect(await q.usage('acme')).toMatchObject({
      total: 5,
      ratio: 0.05,
      categories: { read: 3, simulation: 2 },
    });
    expect(await q.topTenants()).toEqual([
      { tenant: 'globex', total: 9, quota: undefined, ratio: undefined },
      { tenant: 'acme', total: 5, quota: 100, ratio: 0.05 },
    ]);
    const bucket = T0 / 1000;
    const key = `${keyPrefix}{acme}:${bucket}`;
    expect(await redis.hgetall(key)).toEqual({ read: '3', simulation: '2' });
    // The bucket is kept while it can be inside a window: its own minute plus the one-hour window.
    const expireAt = Number(await redis.call('expiretime', key));
    expect(expireAt).toBe(bucket + 60 + 3600);
    expect(await redis.zscore(`${keyPrefix}top:{top}:${bucket}`, 'globex')).toBe('9');
    expect((await redis.keys(`${keyPrefix}*`)).sort()).toEqual(
      [
        `${keyPrefix}top:{top}:${bucket}`,
        `${keyPrefix}{acme}:${bucket}`,
        `${keyPrefix}{globex}:${bucket}`,
      ].sort(),
    );
  });

  it('rolls buckets over with the clock', async () => {
    const { q, clock } = tracker({ windowSeconds: 180, bucketSeconds: 60 });
    q.record('acme', 'read', 4);
    clock.advance(60_000);
    q.record('acme', 'read', 1);
    clock.advance(120_000 - 1);
    expect((await q.usage('acme')).total).toBe(5);
    clock.advance(1);
    expect((await q.usage('acme')).total).toBe(1);
    expect(await q.topTenants()).toEqual([{ tenant: 'acme', total: 1, quota: undefined, ratio: undefined }]);
  });

  it('raises an alert once per crossing across a fleet sharing the store', async () => {
    const other = new Redis(server.port, REDIS_HOST);
    try {
      const a = tracker({ quotas: { acme: 10 }, thresholds: [0.8] });
      const b = new QuotaTracker({
        store: new RedisQuotaStore({ client: other, keyPrefix: a.keyPrefix }),
        clock: a.clock,
        flushIntervalMs: 0,
        quotas: { acme: 10 },
        thresholds: [0.8],
      });
      const bAlerts: QuotaAlert[] = [];
      b.on('alert', (x: QuotaAlert) => bAlerts.push(x));
      a.q.record('acme', 'read', 4);
      b.record('acme', 'read', 4);
      await a.q.flush();
      await b.flush(); // b sees 8/10 first
      a.q.record('acme', 'read');
      await a.q.flush(); // a sees 9/10: crossed too, but b holds the claim
      expect(bAlerts.map((x) => x.usage)).toEqual([8]);
      expect(a.alerts).toEqual([]);
    } finally {
      other.disconnect();
    }
  });

  it('keeps counts through an outage and reports it, then writes them once the server is back', async () => {
    const { q } = tracker();
    const errors: SluiceError[] = [];
    q.on('flushError', (e: SluiceError) => errors.push(e));
    q.record('acme', 'read', 2);
    await server.kill();
    q.record('acme', 'read', 1);
    await expect(q.flush()).rejects.toMatchObject({ code: 'ERR_STORE_UNAVAILABLE' });
    expect(errors).toHaveLength(1);
    await server.restart();
    if (redis.status !== 'ready') await once(redis, 'ready');
    // A restarted server has lost the script (and the data): the store loads it again.
    expect((await q.usage('acme')).total).toBe(3);
  });

  it('reloads its script after SCRIPT FLUSH without counting anything twice', async () => {
    const { q } = tracker();
    q.record('acme', 'read', 2);
    await q.flush();
    await redisCli(server.port, 'SCRIPT', 'FLUSH');
    q.record('acme', 'read', 3);
    expect((await q.usage('acme')).total).toBe(5);
    expect((await q.topTenants())[0].total).toBe(5);
  });

  it('writes a flush of many tenants as one pipeline (one round trip)', async () => {
    // The real client, counted: every command still goes to the real server.
    const sent = { pipelines: 0, calls: 0 };
    const counted = {
      pipeline: (commands: (string | number)[][]) => {
        sent.pipelines++;
        return redis.pipeline(commands);
      },
      call: (command: string, ...args: (string | number)[]) => {
        sent.calls++;
        return redis.call(command, ...args);
      },
    };
    const q = new QuotaTracker({
      store: new RedisQuotaStore({ client: counted, keyPrefix: `t${++prefixes}:quota:` }),
      clock: new ManualClock(T0),
      flushIntervalMs: 0,
    });
    q.record('warm-up', 'read');
    await q.flush(); // makes sure the server holds the script: a NOSCRIPT answer costs one more round trip
    sent.pipelines = 0;
    sent.calls = 0;
    const before = await commandCalls('evalsha');
    for (let i = 0; i < 200; i++) q.record(`tenant-${i}`, 'read', i + 1);
    await q.flush();
    expect(sent).toEqual({ pipelines: 1, calls: 0 });
    expect((await commandCalls('evalsha')) - before).toBe(200);
    const top = await q.topTenants(3);
    expect(top.map((t) => t.total)).toEqual([200, 199, 198]);
  });
});

async function commandCalls(name: string): Promise<number> {
  const info = String(await redis.info('commandstats'));
  const m = new RegExp(`cmdstat_${name}:calls=(\\d+)`).exec(info);
  return m === null ? 0 : Number(m[1]);
}

describe('RedisQuotaStore on a Redis Cluster', () => {
  let cluster: RedisCluster;
  let client: Cluster;

  beforeAll(async () => {
    cluster = await startRedisCluster();
    client = new Cluster([...cluster.startupNodes]);
    await once(client, 'ready');
  });

  afterAll(async () => {
    client?.disconnect();
    await cluster?.stop();
  });

  it('tracks usage, top tenants and alert claims with keys spread over slots', async () => {
    const store = new RedisQuotaStore({ client, keyPrefix: 'c:quota:' });
    const clock = new ManualClock(T0);
    const q = new QuotaTracker({ store, clock, flushIntervalMs: 0, quotas: { acme: 10 } });
    const alerts: QuotaAlert[] = [];
    q.on('alert', (a: QuotaAlert) => alerts.push(a));
    for (let i = 0; i < 20; i++) q.record(`tenant-${i}`, 'read', i + 1);
    q.record('acme', 'read', 8);
    q.record('acme', 'write', 1);
    expect(await q.usage('acme')).toMatchObject({ total: 9, categories: { read: 8, write: 1 } });
    expect((await q.topTenants(2)).map((t) => [t.tenant, t.total])).toEqual([
      ['tenant-19', 20],
      ['tenant-18', 19],
    ]);
    expect(alerts.map((a) => a.threshold)).toEqual([0.8]);
  });
});
