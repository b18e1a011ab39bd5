/**
 * The gateway on a real local Redis Cluster with endpoint rules whose classes are keyed differently from the tier
 * (by IP while the tier is keyed by the caller), so the checks of one request fall in different Cluster slots.
 * They are decided together: admitted while every policy has tokens, refused by the one without, the tier's token
 * given back on such a refusal, and a concurrency slot taken in one slot released when the response ends.
 */
import { join } from 'node:path';
import { RedisStore } from 'sluice/redis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type RedisCluster, startRedisCluster } from '../../../test/support/redis-server.js';
import { admitRequest } from '../src/admission/admit-request.js';
import {
  client,
  send,
  startGateway,
  startUpstream,
  statuses,
  type TestGateway,
  type TestUpstream,
  tempDir,
} from './support.js';

const tmp = tempDir();
const agent = client();
let upstream: TestUpstream;
let cluster: RedisCluster;

beforeAll(async () => {
  [upstream, cluster] = await Promise.all([startUpstream(), startRedisCluster()]);
});
afterAll(async () => {
  await upstream.close();
  await agent.close();
  await cluster.stop();
  tmp.cleanup();
});

// One token per minute: no refill happens while the test runs on Redis's own clock.
const config = (
  failureMode: string,
  prefix: string,
  on: RedisCluster = cluster,
  nodeCount = 1,
) => `rateLimiting:
  defaultTier: standard
  tiers:
    standard: { requestsPerMinute: 1, burstLimit: 5 }
  endpoints:
    - pattern: "/ipr/*"
      class: rl.byip
    - pattern: "/jobs/*"
      class: rl.jobs
ratelimit:
  rl.byip: { per_minute: 1, burst: 3, key: ip }
  rl.jobs: { concurrent: 1, key: ip }
server: { trustedProxies: ["127.0.0.1"] }
identity: { headers: {} }
store:
  type: redis
  cluster: { nodes: [${on.startupNodes.map((n) => `"redis://${n.host}:${n.port}"`).join(', ')}] }
  failureMode: ${failureMode}
  nodeCount: ${nodeCount}
  timeout: 2s
keys: { prefix: "${prefix}:" }
`;

const caller = { 'x-tenant-id': 'acme', 'x-client-id': 'c1' };

async function start(failureMode: string): Promise<TestGateway> {
  return startGateway(join(tmp.dir, `${failureMode}.yaml`), {
    yaml: config(failureMode, `slots-${failureMode}`),
    overrides: { upstream: upstream.url },
  });
}

describe('gateway on a Redis Cluster: a request whose policies fall in different slots', () => {
  for (const failureMode of ['closed', 'open']) {
    it(`decides them together, all or nothing (failureMode ${failureMode})`, async () => {
      const t = await start(failureMode);
      try {
        // The IP class allows 3; the fourth is refused by it, and the tier's token it took comes back.
        expect(await statuses(agent, `${t.gateway.url}/ipr/x`, 4, caller)).toEqual([200, 200, 200, 429]);
        // A concurrency slot keyed by IP, beside the tier: taken, and released when each response ends.
        expect(await statuses(agent, `${t.gateway.url}/jobs/x`, 1, caller)).toEqual([200]);
        // The tier had 5: 3 taken by /ipr, 1 by /jobs, the refused one given back.
        expect(await statuses(agent, `${t.gateway.url}/other`, 2, caller)).toEqual([200, 429]);
        const refused = await send(agent, `${t.gateway.url}/ipr/x`, { headers: caller });
        expect(refused.status).toBe(429);
        expect(JSON.stringify(t.logs.lines)).not.toMatch(/hash tag|store_unavailable/);
        expect((await send(agent, `${t.gateway.url}/ready`)).status).toBe(200);
      } finally {
        await t.gateway.close();
      }
    });
  }

  it('releases a concurrency slot held in another slot than the tier', async () => {
    const t = await start('closed');
    try {
      // One slot per IP: each request ends before the next, so each finds it free again.
      expect(
        await statuses(agent, `${t.gateway.url}/jobs/y`, 3, { 'x-tenant-id': 'acme', 'x-client-id': 'c2' }),
      ).toEqual([200, 200, 200]);
    } finally {
      await t.gateway.close();
    }
  });

  it('answers a store that throws by the failure mode: open admits, closed and local refuse with 503', async () => {
    for (const failureMode of ['open', 'closed', 'local']) {
      const t = await start(failureMode);
      try {
        // A closed store rejects every call: not an outage the store's own failure mode answered.
        t.gateway.store.close();
        const a = await admitRequest(t.gateway, {
          method: 'GET',
          path: '/ipr/x',
          headers: caller,
          clientIp: '127.0.0.1',
          trustIdentityHeaders: true,
          cost: 1,
          correlationId: 'req-1',
        });
        if (failureMode === 'open')
          expect(a).toMatchObject({ kind: 'allow', outcome: 'store_unavailable_open' });
        else expect(a).toMatchObject({ kind: 'deny', status: 503, outcome: 'store_unavailable' });
        const scrape = await t.gateway.scrape();
        expect(scrape).toMatch(/sluice_store_errors_total\{store="redis"\} 1/);
      } finally {
        await t.gateway.close();
      }
    }
  });
  // A node down is an outage, not a throw: under `local`, its slot's checks are decided by the store's local
  // limiter, each limit divided by nodeCount (the tier's burst of 5 is 2 for each of 2 gateways), while the other
  // slots stay on Redis. Only a store that cannot decide at all throws (see the test above).
  it('decides the slot of a stopped node by the local limiter under failureMode local, limits divided by nodeCount', async () => {
    const down = await startRedisCluster();
    const t = await startGateway(join(tmp.dir, 'local-down.yaml'), {
      yaml: config('local', 'slots-local-down', down, 2),
      overrides: { upstream: upstream.url },
    });
    try {
      const store = t.gateway.store as RedisStore;
      expect(store).toBeInstanceOf(RedisStore);
      // A caller whose tier buckets live on the node about to stop.
      let tenant = '';
      for (let i = 0; tenant === ''; i++) {
        const checks = t.gateway.runtime.plan.allChecks(`tenant:t${i}:client:c1`);
        const tier = checks.filter((c) => !c.policy.name.startsWith('rl.'));
        expect(tier.length).toBeGreaterThan(0);
        if ((await down.portForKey(store.keyOf(tier[0].policy, tier[0].key))) === down.nodes[0].port)
          tenant = `t${i}`;
      }
      await down.nodes[0].stop();
      const who = { 'x-tenant-id': tenant, 'x-client-id': 'c1' };
      expect(await statuses(agent, `${t.gateway.url}/other`, 3, who)).toEqual([200, 200, 429]);
      expect(store.stats().fallbackDecisions).toBeGreaterThanOrEqual(3);
    } finally {
      await t.gateway.close();
      await down.stop();
    }
  });
});
