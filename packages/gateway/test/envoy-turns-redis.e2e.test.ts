import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { type RedisServer, startRedisServer } from '../../../test/support/redis-server.js';
import { RateLimitService } from '../src/envoy/rate-limit-service.js';
import { MIXED_REQUEST, mixedDomainYaml } from './envoy-mixed-domain.js';
import { serviceHostOf } from './envoy-service-host.js';
import { startGateway, type TestGateway, tempDir, WALL_MS } from './support.js';

// A Redis that stops answering (SIGSTOP): the first request of a queue on shared buckets waits the store's timeout,
// and the requests queued behind it are answered by the failure mode at once, each without a store call of its own.

const yaml = (url: string) => mixedDomainYaml(500, `store:\n  type: redis\n  url: ${url}\n`);
const mixed = MIXED_REQUEST;

const { dir, cleanup } = tempDir();
let redis: RedisServer;
let t: TestGateway;
beforeAll(async () => {
  redis = await startRedisServer();
  t = await startGateway(join(dir, 'turns-redis.yaml'), { yaml: yaml(redis.url) });
});
afterAll(async () => {
  if (redis?.running) process.kill(redis.pid, 'SIGCONT');
  await t?.gateway.close();
  await redis?.stop();
  cleanup();
});

it('answers a queue of requests on a stopped Redis with one store timeout, not one each', async () => {
  const real = t.gateway.store;
  let calls = 0;
  const store = new Proxy(real, {
    get(target, p) {
      const v = Reflect.get(target, p, target);
      if (p === 'peek' || p === 'decide') calls++;
      return typeof v === 'function' ? v.bind(target) : v;
    },
  });
  const { host, decisions } = serviceHostOf(t.gateway, store);
  const rls = new RateLimitService(host, () => WALL_MS);
  expect((await rls.shouldRateLimit(mixed)).statuses.map((s) => s.limit_remaining)).toEqual([499, 498]);
  calls = 0;
  decisions.length = 0;
  process.kill(redis.pid, 'SIGSTOP');
  try {
    const answers = await Promise.all(Array.from({ length: 20 }, () => rls.shouldRateLimit(mixed)));
    expect(answers.map((a) => a.overall_code)).toEqual(Array(20).fill('OK'));
    // The first request's two peeks reached the store; the other 19 were answered without a call.
    expect(calls).toBe(2);
    expect(decisions.filter((d) => d.reason === 'store_unavailable_open').length).toBeGreaterThanOrEqual(19);
  } finally {
    process.kill(redis.pid, 'SIGCONT');
  }
});
