import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
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
let running: TestGateway | undefined;
const TOKEN = 'admin-token-0123456789';
const auth = { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' };

const yaml = `rateLimiting:
  defaultTier: free
  tiers:
    free: { requestsPerMinute: 60, burstLimit: 5 }
admin:
  port: 0
  token: \${ADMIN_TOKEN}
`;

beforeAll(async () => {
  upstream = await startUpstream();
});
afterAll(async () => {
  await upstream.close();
  await agent.close();
  tmp.cleanup();
});
afterEach(async () => {
  await running?.gateway.close();
  running = undefined;
});

async function start(): Promise<{ t: TestGateway; admin: string }> {
  running = await startGateway(join(tmp.dir, 'keys.yaml'), {
    yaml,
    env: { ADMIN_TOKEN: TOKEN },
    overrides: { upstream: upstream.url },
  });
  return { t: running, admin: running.gateway.adminUrl as string };
}

describe('admin API on keys', () => {
  it('inspects and resets the bucket of a limit override in force for the key', async () => {
    const { t, admin } = await start();
    const rule = { pattern: 'ip:127.0.0.1', quota: 1, window: 3600, reason: 'test' };
    const set = await send(agent, `${admin}/overrides`, {
      method: 'PUT',
      headers: auth,
      body: JSON.stringify(rule),
    });
    expect(set.status).toBeLessThan(300);
    expect(await statuses(agent, `${t.gateway.url}/a`, 2)).toEqual([200, 429]);
    const key = encodeURIComponent('ip:127.0.0.1');
    const got = await send(agent, `${admin}/keys/${key}`, { headers: auth });
    expect(got.status, got.text).toBe(200);
    const view = got.json<{
      buckets: { policy: string; quota: number; remaining: number; override?: string }[];
    }>();
    expect(view.buckets).toContainEqual(
      expect.objectContaining({
        policy: 'free',
        quota: 1,
        remaining: 0,
        override: expect.stringContaining('ip:127.0.0.1'),
      }),
    );
    expect((await send(agent, `${admin}/keys/${key}`, { method: 'DELETE', headers: auth })).status).toBe(204);
    expect(await statuses(agent, `${t.gateway.url}/a`, 2)).toEqual([200, 429]);
  });

  it('refuses a key the gateway never makes with a 400 naming the forms of keys', async () => {
    const { admin } = await start();
    for (const key of ['acme%3Aci-bot', 'ip%3A10.0.0.0%2F8', 'tenant%3Aacme%3Aclient%3A*', 'nokind']) {
      for (const method of ['GET', 'DELETE']) {
        const res = await send(agent, `${admin}/keys/${key}`, { method, headers: auth });
        expect(res.status, `${method} ${key}`).toBe(400);
        expect(res.json<{ detail: string }>().detail).toContain('tenant:<t>:client:<c>');
      }
    }
    for (const key of ['ip%3A127.0.0.1', 'tenant%3Aacme%3Aclient%3Aci-bot', 'ip%3A2001%3Adb8%3A%3A%2F64']) {
      expect((await send(agent, `${admin}/keys/${key}`, { headers: auth })).status, key).toBe(200);
    }
  });
});
