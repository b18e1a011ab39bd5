/**
 * Costs settled from the response on the Redis store: two gateways share a token bucket, one serves a request
 * whose usage is settled after its response, the other's next answer shows the bucket after the settlement.
 */
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type RedisServer, startRedisServer } from '../../../test/support/redis-server.js';
import { client, send, startGateway, startUpstream, type TestUpstream, tempDir } from './support.js';

const tmp = tempDir();
const agent = client();
let upstream: TestUpstream;
let redis: RedisServer;

beforeAll(async () => {
  redis = await startRedisServer();
  upstream = await startUpstream();
}, 30_000);
afterAll(async () => {
  await agent.close();
  await upstream.close();
  await redis.stop();
  tmp.cleanup();
});

// One token a minute refills nothing while the test runs on Redis's own clock.
const CONFIG = `rateLimiting:
  defaultTier: free
  tiers:
    free: { requestsPerMinute: 1000, burstLimit: 1000 }
  endpoints:
    - pattern: /v1/chat/completions
      name: llm-tokens
      limit: 1
      window: 60s
      burst: 500
      cost: { json: usage.total_tokens, reserve: 100 }
store:
  type: redis
  url: \${REDIS_URL}
keys: { prefix: "gw-settle:" }
`;

function r(headers: Record<string, string | string[] | undefined>, policy: string): number {
  const m = new RegExp(`"${policy}";r=(\\d+)`).exec(String(headers.ratelimit ?? ''));
  return m === null ? Number.NaN : Number(m[1]);
}

describe('costs settled on the Redis store', () => {
  it('settles through one gateway and shows in the other: a refund, then a debt', async () => {
    const env = { REDIS_URL: redis.url };
    const a = await startGateway(join(tmp.dir, 'a.yaml'), {
      yaml: CONFIG,
      env,
      overrides: { upstream: upstream.url },
    });
    const b = await startGateway(join(tmp.dir, 'b.yaml'), {
      yaml: CONFIG,
      env,
      overrides: { upstream: upstream.url },
    });
    try {
      let tokens = 30;
      upstream.handler = (req, res) => {
        req.resume();
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ usage: { total_tokens: tokens } }));
      };
      const post = (url: string) => send(agent, `${url}/v1/chat/completions`, { method: 'POST', body: '{}' });
      const first = await post(a.gateway.url);
      expect(r(first.headers, 'llm-tokens')).toBe(400);
      // The settlement rides the next batch: ask the other gateway until it shows (each ask reserves 100 more
      // and settles 30 of it after its own answer).
      let seen = Number.NaN;
      const want = [500 - 30 - 100, 500 - 30 - 30 - 100, 500 - 30 - 30 - 30 - 100];
      for (let i = 0; i < 3 && !want.includes(seen); i++)
        seen = r((await post(b.gateway.url)).headers, 'llm-tokens');
      expect(want).toContain(seen);
      // A usage far above the reservation leaves a debt both gateways see.
      tokens = 2000;
      await post(a.gateway.url);
      let denied = await post(b.gateway.url);
      for (let i = 0; i < 20 && denied.status !== 429; i++) denied = await post(b.gateway.url);
      expect(denied.status).toBe(429);
      expect(r(denied.headers, 'llm-tokens')).toBe(0);
      // One token a minute: the debt and the reservation take far longer than a minute to refill.
      expect(Number(denied.headers['retry-after'])).toBeGreaterThan(60 * 100);
    } finally {
      await a.gateway.close();
      await b.gateway.close();
    }
  });
});
