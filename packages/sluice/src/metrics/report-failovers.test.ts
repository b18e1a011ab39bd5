import { Redis } from 'ioredis';
import { describe, expect, it } from 'vitest';
import { startRedisServer } from '../../../../test/support/redis-server.js';
import { definePolicy } from '../core/index.js';
import { PrometheusMetrics } from '../prometheus/index.js';
import { RedisStore } from '../redis/index.js';
import { reportFailovers } from './report-failovers.js';

const policy = definePolicy({ name: 'rl.write', quota: 100, window: 1, burst: 100 });

/** Waits (real time) for state that arrives through real I/O: a process kill or restart and a reconnect. */
async function eventually(check: () => Promise<boolean>, what: string, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

describe('reportFailovers with a real RedisStore', () => {
  it('sets the failure mode gauge while Redis is down and counts the switch', async () => {
    const server = await startRedisServer();
    const client = new Redis({
      host: server.host,
      port: server.port,
      enableOfflineQueue: false,
      retryStrategy: () => 20,
    });
    client.on('error', () => {});
    await new Promise((resolve) => client.once('ready', resolve));
    const store = new RedisStore({ client, failureMode: 'local', breaker: { probeIntervalMs: 50 } });
    const metrics = new PrometheusMetrics();
    const stop = reportFailovers(store, metrics);
    const active = async () => {
      const text = await metrics.metrics();
      return /sluice_store_failure_mode_active\{store="redis",mode="local"\} (\d)/.exec(text)?.[1];
    };
    try {
      await store.decide([{ policy, key: 'k' }], 1);
      expect(await active()).toBeUndefined();
      await server.kill();
      await eventually(async () => {
        await store.decide([{ policy, key: 'k' }], 1);
        return (await active()) === '1';
      }, 'the failover');
      await server.restart();
      await eventually(async () => {
        await store.decide([{ policy, key: 'k' }], 1);
        return (await active()) === '0';
      }, 'the recovery');
      expect(await metrics.metrics()).toContain(
        'sluice_store_failure_mode_switches_total{store="redis",mode="local"} 1',
      );
      stop();
    } finally {
      client.disconnect();
      await server.stop();
    }
  });
});
