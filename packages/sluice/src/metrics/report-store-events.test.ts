import { Redis } from 'ioredis';
import { describe, expect, it } from 'vitest';
import { startRedisServer } from '../../../../test/support/redis-server.js';
import { definePolicy, ManualClock } from '../core/index.js';
import { MemoryStore } from '../memory/index.js';
import { PrometheusMetrics } from '../prometheus/index.js';
import { RedisStore, reconnectBackoff } from '../redis/index.js';
import { reportStoreEvents } from './report-store-events.js';
import { isStoreStatsSource } from './store-stats.js';

const policy = definePolicy({ name: 'rl.write', quota: 100, window: 1, burst: 100 });

/** Waits (real time) for state that arrives through real I/O: a process kill or restart and a reconnect. */
async function eventually(check: () => Promise<boolean>, what: string): Promise<void> {
  const deadline = Date.now() + 10_000;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

/** The value of one series in the exposition text, or undefined when absent. */
function sample(text: string, series: string): string | undefined {
  for (const line of text.split('\n'))
    if (line.startsWith(`${series} `)) return line.slice(series.length + 1);
  return undefined;
}

describe('isStoreStatsSource', () => {
  it('accepts stores whose stats() reports whole numbers, and nothing else', () => {
    const redis = new RedisStore({ client: new Redis({ lazyConnect: true }) });
    expect(isStoreStatsSource(new MemoryStore({ sweepIntervalMs: 0 }))).toBe(true);
    expect(isStoreStatsSource(redis)).toBe(true);
    expect(isStoreStatsSource({ kind: 'x', stats: () => ({ trackedKeys: 1 }) })).toBe(false);
    expect(isStoreStatsSource({ kind: 'x', stats: () => ({ trackedKeys: Number.NaN, evictions: 0 }) })).toBe(
      false,
    );
    expect(isStoreStatsSource({ kind: 'x', stats: () => ({ trackedKeys: 1.5, evictions: 0 }) })).toBe(false);
    expect(
      isStoreStatsSource({
        kind: 'x',
        stats: () => {
          throw new Error('no');
        },
      }),
    ).toBe(false);
    expect(isStoreStatsSource({ stats: () => ({ trackedKeys: 1, evictions: 0 }) })).toBe(false);
    expect(isStoreStatsSource(null)).toBe(false);
  });

  it('observes a RedisStore as numbers: tracked keys never read NaN', async () => {
    const client = new Redis({ host: '127.0.0.1', port: 1, enableOfflineQueue: false, lazyConnect: true });
    client.on('error', () => {});
    const store = new RedisStore({ client, clock: new ManualClock(0), failureMode: 'local' });
    const metrics = new PrometheusMetrics({ prefix: 'gw' });
    metrics.observeStore(store).observeStore(store);
    for (let i = 0; i < 3; i++) await store.decide([{ policy, key: `k${i}` }], 1);
    const text = await metrics.metrics();
    expect(text).not.toContain('NaN');
    expect(sample(text, 'gw_tracked_keys{store="redis"}')).toBe('3');
    // Evictions get a series once there is one to count.
    expect(sample(text, 'gw_evictions_total{store="redis"}') ?? '0').toBe('0');
    expect(() => metrics.observeStore({ kind: 'x', stats: () => ({}) } as never)).toThrow(
      /observeStore source must be a store with kind and stats\(\) reporting whole numbers/,
    );
    client.disconnect();
  });
});

describe('reportStoreEvents with a real RedisStore', () => {
  it('starts the gauge at 0, counts store errors and the switch, and clears the gauge on recovery', async () => {
    const server = await startRedisServer();
    const client = new Redis({
      host: server.host,
      port: server.port,
      enableOfflineQueue: false,
      retryStrategy: reconnectBackoff({ initialMs: 10, maxMs: 50 }),
    });
    client.on('error', () => {});
    await new Promise((resolve) => client.once('ready', resolve));
    const store = new RedisStore({ client, failureMode: 'local', breaker: { probeIntervalMs: 50 } });
    const metrics = new PrometheusMetrics();
    const stop = reportStoreEvents(store, metrics);
    const active = async () =>
      sample(await metrics.metrics(), 'sluice_store_failure_mode_active{store="redis",mode="local"}');
    try {
      await store.decide([{ policy, key: 'k' }], 1);
      expect(await active()).toBe('0');
      await server.kill();
      await eventually(async () => {
        await store.decide([{ policy, key: 'k' }], 1);
        return (await active()) === '1';
      }, 'the failover');
      const down = await metrics.metrics();
      expect(sample(down, 'sluice_store_errors_total{store="redis"}')).toBe(String(store.stats().errors));
      expect(store.stats().errors).toBeGreaterThanOrEqual(3);
      await server.restart();
      await eventually(async () => {
        await store.decide([{ policy, key: 'k' }], 1);
        return (await active()) === '0';
      }, 'the recovery');
      const text = await metrics.metrics();
      expect(sample(text, 'sluice_store_failure_mode_switches_total{store="redis",mode="local"}')).toBe('1');
      stop();
      expect(text).not.toContain('NaN');
    } finally {
      client.disconnect();
      await server.stop();
    }
  });
});
