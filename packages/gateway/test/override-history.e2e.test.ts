import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { startRedisServer } from '../../../test/support/redis-server.js';
import { MAX_PENALTY_BLOCKS } from '../src/admission/penalties.js';
import { redisSuite } from './redis-suite.js';
import { send, startGateway, type TestGateway } from './support.js';

const TOKEN = 'admin-token-0123456789';
const auth = { authorization: `Bearer ${TOKEN}` };
let gateway: TestGateway | undefined;
const suite = redisSuite(
  () => startRedisServer(),
  async () => gateway?.gateway.close(),
);
const { tmp, agent } = suite;

describe('the history of overrides under a flood of penalty blocks (Redis)', () => {
  it("keeps the operator's change when anonymous clients fill the penalty blocks", async () => {
    // One request a minute per client, a penalty block at the first denial: every client's second request sets one.
    const yaml =
      'rateLimiting:\n  defaultTier: t\n  tiers:\n    t: { requestsPerMinute: 1, burstLimit: 1 }\n' +
      `admin:\n  port: 0\n  token: "${TOKEN}"\n  token_name: alice\n` +
      'server: { trustedProxies: [loopback] }\n' +
      'penalty:\n  after: 1\n  within: 60s\n  block: 20s\n' +
      `store: { type: redis, url: "${suite.redis.url}" }\nkeys: { prefix: "history-flood:" }\n`;
    gateway = await startGateway(join(tmp.dir, 'flood.yaml'), {
      yaml,
      overrides: { upstream: suite.upstream.url },
    });
    const g = gateway.gateway;
    const put = await send(agent, `${g.adminUrl}/overrides`, {
      method: 'PUT',
      headers: { ...auth, 'content-type': 'application/json' },
      body: JSON.stringify({ pattern: 'tenant:acme', quota: 600, window: 60, reason: 'launch week' }),
    });
    expect(put.status).toBe(200);
    // More /64s than the penalty blocks one gateway keeps in force, each limited once.
    const clients = Array.from(
      { length: MAX_PENALTY_BLOCKS + 20 },
      (_, i) => `2001:db8:${i.toString(16)}::1`,
    );
    for (let i = 0; i < clients.length; i += 50) {
      await Promise.all(
        clients.slice(i, i + 50).map(async (ip) => {
          const headers = { 'x-forwarded-for': ip };
          await send(agent, `${g.url}/x`, { headers });
          await send(agent, `${g.url}/x`, { headers });
        }),
      );
    }
    await expect.poll(() => g.penalties.active, { timeout: 10_000 }).toBe(MAX_PENALTY_BLOCKS);
    const history = (await send(agent, `${g.adminUrl}/overrides/history`, { headers: auth })).json<{
      changes: { who: string; reason: string }[];
    }>().changes;
    expect(history[0]).toMatchObject({ who: 'alice', reason: 'launch week' });
    expect(history.filter((c) => c.who === 'penalty').length).toBeGreaterThanOrEqual(MAX_PENALTY_BLOCKS - 1);
  }, 120_000);
});
