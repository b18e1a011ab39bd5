import { join } from 'node:path';
import type { Redis } from 'ioredis';
import { definePolicy } from 'sluice';
import { MemoryStore } from 'sluice/memory';
import { PrometheusMetrics } from 'sluice/prometheus';
import { RedisStore } from 'sluice/redis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type RedisServer, startRedisServer } from '../../../test/support/redis-server.js';
import type { GatewayConfig } from '../src/config/gateway-config.js';
import { loadConfigText } from '../src/config/load-config.js';
import { createLogger } from '../src/log/create-logger.js';
import { createStore } from '../src/store/create-store.js';
import { observeStore } from '../src/store/observe-store.js';
import { LogCapture, tempDir } from './support.js';

const tmp = tempDir();
let redis: RedisServer;
beforeAll(async () => {
  redis = await startRedisServer();
});
afterAll(async () => {
  await redis?.stop();
  tmp.cleanup();
});

const tiers = `rateLimiting:
  defaultTier: free
  tiers:
    free: { requestsPerMinute: 60, burstLimit: 6 }
`;

function load(store: string, env: Record<string, string> = {}) {
  return loadConfigText(`${tiers}store: ${store}\n`, join(tmp.dir, 'c.yaml'), { env });
}

function config(store: string, env: Record<string, string> = {}): GatewayConfig {
  const r = load(store, env);
  if (!r.ok) throw new Error(JSON.stringify(r.violations));
  return r.config;
}

/** A Redis store section in block style (a `${...}` reference cannot sit in a flow mapping). */
const redisStore = (nodeCount: string) =>
  `\n  type: redis\n  url: "redis://127.0.0.1:1"\n  failureMode: local\n  nodeCount: ${nodeCount}`;

describe('store.nodeCount', () => {
  it(`defaults to 1 and takes a positive integer, also from an unquoted \${ENV} reference`, () => {
    expect(config('{ type: redis, url: "redis://127.0.0.1:1" }').store.nodeCount).toBe(1);
    expect(config(redisStore('4')).store.nodeCount).toBe(4);
    expect(config(redisStore(`\${REPLICAS}`), { REPLICAS: '6' }).store.nodeCount).toBe(6);
    expect(config(redisStore(`\${REPLICAS:-3}`)).store.nodeCount).toBe(3);
  });

  it('reports a bad value at its path: zero, a fraction, a word, a quoted reference, a memory store', () => {
    const messages = (store: string, env: Record<string, string> = {}) => {
      const r = load(store, env);
      expect(r.ok).toBe(false);
      return r.violations.map((v) => `${v.path}: ${v.message}`);
    };
    for (const bad of ['0', '1.5', 'many']) {
      expect(messages(redisStore(bad)).join('\n')).toMatch(/^store\.nodeCount: /);
    }
    expect(messages(redisStore(`\${REPLICAS}`), { REPLICAS: 'two' }).join('\n')).toMatch(
      /^store\.nodeCount: /,
    );
    // A quoted reference stays a string, as the README says.
    expect(messages(redisStore(`"\${REPLICAS}"`), { REPLICAS: '2' }).join('\n')).toMatch(
      /^store\.nodeCount: /,
    );
    expect(messages('{ type: memory, nodeCount: 2 }')).toEqual([
      'store.nodeCount: applies only to store type "redis"',
    ]);
  });
});

describe('createStore on Redis', () => {
  it('passes nodeCount, failure mode and timeout to the RedisStore', async () => {
    const opened = createStore(
      config(`{ type: redis, url: "${redis.url}", failureMode: local, nodeCount: 5, timeout: 250ms }`),
    );
    try {
      expect(opened.store).toBeInstanceOf(RedisStore);
      expect((opened.store as RedisStore).options).toMatchObject({
        failureMode: 'local',
        nodeCount: 5,
        timeoutMs: 250,
      });
    } finally {
      await opened.close();
    }
  });

  it('gives each of several threads its share of the local failure mode: nodeCount x threads', async () => {
    const opened = createStore(
      config(`{ type: redis, url: "${redis.url}", failureMode: local, nodeCount: 3 }`),
      undefined,
      4,
    );
    try {
      expect((opened.store as RedisStore).options.nodeCount).toBe(12);
    } finally {
      await opened.close();
    }
  });

  it('opens ioredis without an offline queue, with a connect timeout and a reconnect backoff capped at 500 ms', async () => {
    const opened = createStore(config(`{ type: redis, url: "${redis.url}" }`));
    try {
      const o = (opened.redis as Redis).options;
      expect(o.enableOfflineQueue).toBe(false);
      expect(o.autoResendUnfulfilledCommands).toBe(false);
      expect(o.connectTimeout).toBe(1000);
      const retry = o.retryStrategy as (times: number) => number;
      expect([1, 2, 3, 4, 5, 6, 50].map((n) => retry(n))).toEqual([50, 100, 200, 400, 500, 500, 500]);
    } finally {
      await opened.close();
    }
  });

  it('lets the first decisions wait for the first connection instead of answering from the failure mode', async () => {
    const opened = createStore(
      config(`{ type: redis, url: "${redis.url}", failureMode: closed, timeout: 2s }`),
    );
    const policy = definePolicy({ name: 'free', quota: 60, window: 60, burst: 6 });
    try {
      // Called in the same tick as createStore: the connection is still being opened.
      const first = await Promise.all(
        [1, 2, 3].map(() => opened.store.decide([{ policy, key: `first-${Date.now()}` }], 1)),
      );
      expect(first.map((d) => d.reason)).toEqual(['allowed', 'allowed', 'allowed']);
      expect((opened.store as RedisStore).stats()).toMatchObject({ fallbackDecisions: 0, errors: 0 });
    } finally {
      await opened.close();
    }
  });
});

describe('observeStore', () => {
  it('reads the memory store at scrape time and reports no failure mode for it', async () => {
    const metrics = new PrometheusMetrics({ prefix: 'gw' });
    const store = new MemoryStore({ sweepIntervalMs: 0 });
    const logs = new LogCapture();
    const stop = observeStore(metrics, store, createLogger('info', logs));
    store.decide([{ policy: definePolicy({ name: 'p', quota: 1, window: 60 }), key: 'k' }], 1);
    const text = await metrics.metrics();
    expect(text).toContain('gw_tracked_keys{store="memory"} 1');
    expect(text).not.toContain('gw_store_failure_mode_active{');
    stop();
    store.close();
  });

  it('turns a Redis outage into the gauge, error and switch counters, and one warn line', async () => {
    const metrics = new PrometheusMetrics({ prefix: 'gw' });
    const opened = createStore(
      config('{ type: redis, url: "redis://127.0.0.1:1", failureMode: local, nodeCount: 2 }'),
    );
    const logs = new LogCapture();
    const stop = observeStore(metrics, opened.store, createLogger('info', logs));
    // A second call (the gateway's own, and a test's) counts and logs nothing twice.
    observeStore(metrics, opened.store, createLogger('info', logs))();
    const policy = definePolicy({ name: 'free', quota: 60, window: 60, burst: 6 });
    try {
      expect(await metrics.metrics()).toContain('gw_store_failure_mode_active{store="redis",mode="local"} 0');
      const seen = [];
      for (let i = 0; i < 4; i++) seen.push(await opened.store.decide([{ policy, key: 'k' }], 1));
      // Local mode decides for real: burst 6 over 2 gateways is 3.
      expect(seen.map((d) => d.reason)).toEqual(['allowed', 'allowed', 'allowed', 'limited']);
      expect(seen[3].retryAfterSeconds).toBe(2); // 30 per minute per gateway: one token in 2 s
      const text = await metrics.metrics();
      expect(text).toContain('gw_store_failure_mode_active{store="redis",mode="local"} 1');
      expect(text).toContain('gw_store_failure_mode_switches_total{store="redis",mode="local"} 1');
      expect(text).toMatch(/gw_store_errors_total\{store="redis"\} [3-9]/);
      expect(text).toMatch(/gw_tracked_keys\{store="redis"\} \d+\n/);
      expect(text).not.toContain('NaN');
      const warn = logs.lines.filter((l) => l.level === 40);
      expect(warn).toHaveLength(1);
      expect(warn[0]).toMatchObject({
        store: 'redis',
        failureMode: 'local',
        msg: 'rate limit store unavailable: decisions follow the failure mode "local"',
      });
    } finally {
      stop();
      await opened.close();
    }
  });
});
