import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  type RedisCluster,
  type RedisServer,
  startRedisCluster,
  startRedisServer,
} from '../../../test/support/redis-server.js';
import { RateLimitService } from '../src/envoy/rate-limit-service.js';
import { startGateway, type TestGateway, tempDir, WALL_MS } from './support.js';

const config = (store: string) => `rateLimiting:
  defaultTier: free
  tiers:
    free:
      requestsPerMinute: 60
      burstLimit: 2
${store}headers:
  mode: draft-11
envoy:
  port: 0
  domains:
    - domain: edge
      descriptors:
        - key: remote_address
          rate_limit:
            requests_per_unit: 2
            unit: minute
        - key: user
          rate_limit:
            requests_per_unit: 3
            unit: hour
`;

const d = (key: string, value: string) => ({ entries: [{ key, value }] });

/** The Envoy service over the Redis store: a single server, and a Redis Cluster whose slots split descriptors. */
describe('Envoy rate limit service on Redis', () => {
  const { dir, cleanup } = tempDir();
  let redis: RedisServer;
  let cluster: RedisCluster;
  const started: TestGateway[] = [];

  beforeAll(async () => {
    [redis, cluster] = await Promise.all([startRedisServer(), startRedisCluster()]);
  });
  afterAll(async () => {
    for (const t of started) await t.gateway.close();
    await redis?.stop();
    await cluster?.stop();
    cleanup();
  });

  async function start(store: string, name: string) {
    const t = await startGateway(join(dir, `${name}.yaml`), { yaml: config(store) });
    started.push(t);
    // The service itself, without its gRPC listener: these tests decide over the store, not the transport.
    return new RateLimitService(t.gateway, () => WALL_MS);
  }

  it('decides across descriptors all or nothing in one script on a single Redis', async () => {
    const rls = await start(`store:\n  type: redis\n  url: ${redis.url}\n`, 'single');
    expect(rls.plan).toBeDefined();
    const both = [d('remote_address', '10.9.0.1'), d('user', 'alice')];
    const a = await rls.shouldRateLimit({ domain: 'edge', descriptors: both });
    expect(a.statuses.map((s) => s.limit_remaining)).toEqual([1, 2]);
    await rls.shouldRateLimit({ domain: 'edge', descriptors: both });
    const over = await rls.shouldRateLimit({ domain: 'edge', descriptors: both });
    expect(over.overall_code).toBe('OVER_LIMIT');
    expect(over.statuses.map((s) => [s.code, s.limit_remaining])).toEqual([
      ['OVER_LIMIT', 0],
      ['OK', 1],
    ]);
    expect(over.response_headers_to_add.find((h) => h.key === 'Retry-After')?.value).toBe('30');
  });

  it('decides descriptors whose keys live in different cluster slots one by one, taking nothing on a denial', async () => {
    const nodes = cluster.startupNodes.map((n) => `redis://${n.host}:${n.port}`);
    const rls = await start(
      `store:\n  type: redis\n  cluster:\n    nodes: [${nodes.join(', ')}]\n`,
      'cluster',
    );
    const both = [d('remote_address', '10.9.0.2'), d('user', 'bob')];
    const a = await rls.shouldRateLimit({ domain: 'edge', descriptors: both });
    expect(a.overall_code).toBe('OK');
    expect(a.statuses.map((s) => s.limit_remaining)).toEqual([1, 2]);
    await rls.shouldRateLimit({ domain: 'edge', descriptors: both });
    const over = await rls.shouldRateLimit({ domain: 'edge', descriptors: both });
    expect(over.statuses.map((s) => [s.code, s.limit_remaining])).toEqual([
      ['OVER_LIMIT', 0],
      ['OK', 1],
    ]);
    expect(
      (await rls.shouldRateLimit({ domain: 'edge', descriptors: [d('user', 'bob')] })).statuses[0]
        .limit_remaining,
    ).toBe(0);
  });
});
