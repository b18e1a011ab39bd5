import { join } from 'node:path';
import { credentials, type ServiceError } from '@grpc/grpc-js';
import { clusterSlot, RedisStore } from 'sluice/redis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  type RedisCluster,
  type RedisServer,
  startRedisCluster,
  startRedisServer,
} from '../../../test/support/redis-server.js';
import { rateLimitPackage } from '../src/envoy/grpc-server.js';
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
    - domain: mixed
      descriptors:
        - key: remote_address
          rate_limit:
            requests_per_unit: 5
            unit: minute
        - key: path
          value: "/admin*"
          rate_limit:
            requests_per_unit: 2
            unit: minute
`;

const d = (key: string, value: string) => ({ entries: [{ key, value }] });

interface Answer {
  overall_code: string;
  statuses: { code: string; limit_remaining: number }[];
  response_headers_to_add: { key: string; value: string }[];
}
type Client = InstanceType<ReturnType<typeof rateLimitPackage>['RateLimitService']>;
const ask = (c: Client, descriptors: unknown[]) =>
  new Promise<Answer>((resolve, reject) => {
    c.ShouldRateLimit({ domain: 'mixed', descriptors }, (e: ServiceError | null, r: Answer) =>
      e ? reject(e) : resolve(r),
    );
  });
/** What one answer says: its code, each descriptor's code and remaining, its Retry-After. */
const said = (a: Answer) =>
  [
    a.overall_code,
    ...a.statuses.map((s) => `${s.code}/${s.limit_remaining}`),
    a.response_headers_to_add.find((h) => h.key === 'Retry-After')?.value ?? '-',
  ].join(' ');

/** The Cluster slots of a request's descriptors in domain `mixed`, as the gateway's store keys them. */
function slotsOf(
  t: TestGateway,
  rls: RateLimitService,
  descriptors: { entries: { key: string; value: string }[] }[],
) {
  const store = t.gateway.store as RedisStore;
  expect(store).toBeInstanceOf(RedisStore);
  const slots = new Set<number>();
  for (const x of descriptors) {
    const policy = rls.plan.match('mixed', x.entries)?.policy;
    if (policy === undefined) throw new Error('no policy');
    slots.add(clusterSlot(store.keyOf(policy, rls.plan.bucketKey('mixed', x.entries))));
  }
  return slots;
}

/** The Envoy service over the Redis store: a single server, and a Redis Cluster whose slots split descriptors. */
describe('Envoy rate limit service on Redis', () => {
  const { dir, cleanup } = tempDir();
  let redis: RedisServer;
  let cluster: RedisCluster;
  const started: TestGateway[] = [];
  const clients: Client[] = [];

  beforeAll(async () => {
    [redis, cluster] = await Promise.all([startRedisServer(), startRedisCluster()]);
  });
  afterAll(async () => {
    for (const c of clients) c.close();
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

  // Ten calls at once of [remote_address cost 1 (5 a minute), path cost 2 (2 a minute)]: the first takes 1 and 2,
  // the nine others find the path empty. Each answer must name the path, with the address's true level and the
  // path's Retry-After, as the memory store answers: never the address, drained for an instant by a neighbour's
  // take that its own denial then refunded.
  for (const kind of ['memory', 'single', 'cluster'] as const) {
    it(`blames the descriptor that denied, with its Retry-After, under concurrent mixed costs (${kind})`, async () => {
      const store =
        kind === 'memory'
          ? ''
          : kind === 'single'
            ? `store:\n  type: redis\n  url: ${redis.url}\n`
            : `store:\n  type: redis\n  cluster:\n    nodes: [${cluster.startupNodes.map((n) => `redis://${n.host}:${n.port}`).join(', ')}]\n`;
      const rls = await start(store, `mixed-${kind}`);
      const t = started[started.length - 1];
      const c = new (rateLimitPackage().RateLimitService)(
        t.gateway.envoyAddress as string,
        credentials.createInsecure(),
      );
      clients.push(c);
      const both = [
        { ...d('remote_address', `10.7.0.${kind.length}`), hits_addend: { value: 1 } },
        { ...d('path', '/admin/z'), hits_addend: { value: 2 } },
      ];
      if (kind === 'cluster') expect(slotsOf(t, rls, both).size).toBe(2);
      const answers = await Promise.all(Array.from({ length: 10 }, () => ask(c, both)));
      const counts = new Map<string, number>();
      for (const a of answers) counts.set(said(a), (counts.get(said(a)) ?? 0) + 1);
      expect(Object.fromEntries(counts)).toEqual({
        'OK OK/4 OK/0 -': 1,
        'OVER_LIMIT OK/4 OVER_LIMIT/0 60': 9,
      });
      const peek = await ask(
        c,
        both.map((x) => ({ ...x, hits_addend: { value: 0 } })),
      );
      expect(peek.statuses.map((s) => s.limit_remaining)).toEqual([4, 0]);
    });
  }
  // The same with equal costs: one store call, which the Cluster store splits by slot (a take in each, a give back
  // on a denial). Ten at once of [remote_address (5 a minute), path (2 a minute)], cost 1 each: two admitted, the
  // eight others denied by the path alone, with the address's level after the two admissions (3) and the path's
  // Retry-After (30 s), as a peek afterwards reads them; never the address, drained for an instant by a
  // neighbour's take in its slot that the path's denial then gave back.
  it('blames the descriptor that denied, with its Retry-After, under concurrent equal costs in different cluster slots', async () => {
    const nodes = cluster.startupNodes.map((n) => `redis://${n.host}:${n.port}`);
    const rls = await start(
      `store:\n  type: redis\n  cluster:\n    nodes: [${nodes.join(', ')}]\n`,
      'equal-cluster',
    );
    const t = started[started.length - 1];
    const c = new (rateLimitPackage().RateLimitService)(
      t.gateway.envoyAddress as string,
      credentials.createInsecure(),
    );
    clients.push(c);
    const both = [
      { ...d('remote_address', '10.8.0.1'), hits_addend: { value: 1 } },
      { ...d('path', '/admin/eq'), hits_addend: { value: 1 } },
    ];
    expect(slotsOf(t, rls, both).size).toBe(2);
    const answers = await Promise.all(Array.from({ length: 10 }, () => ask(c, both)));
    const counts = new Map<string, number>();
    for (const a of answers) counts.set(said(a), (counts.get(said(a)) ?? 0) + 1);
    expect(Object.fromEntries(counts)).toEqual({
      'OK OK/4 OK/1 -': 1,
      'OK OK/3 OK/0 -': 1,
      'OVER_LIMIT OK/3 OVER_LIMIT/0 30': 8,
    });
    const peek = await ask(
      c,
      both.map((x) => ({ ...x, hits_addend: { value: 0 } })),
    );
    expect(peek.statuses.map((s) => s.limit_remaining)).toEqual([3, 0]);
  });
});
