import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { MemoryStore } from 'sluice/memory';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type RedisServer, redisCli, startRedisServer } from '../../../test/support/redis-server.js';
import { main } from '../src/cli/main.js';
import { loadConfigText } from '../src/config/load-config.js';
import { Dashboard, RateWindow } from '../src/dashboard/index.js';
import { AdminServer } from '../src/server/admin-server.js';
import {
  client,
  send,
  startGateway,
  startUpstream,
  type TestGateway,
  type TestUpstream,
  tempDir,
} from './support.js';

/** Known secret values: none of them may appear in any output the gateway or the command produces. */
const SECRET = {
  redisPassword: 'RedisPw-7f3a9c',
  sentinelPassword: '918273645',
  adminToken: 'admin-token-5e6f7a8b9c0d',
  shortToken: 'tinyTok9',
  webhookSecret: 'webhook-secret-2b3c4d5e6f',
  webhookPassword: 'HookPw-61c0',
  upstreamPassword: 'UpstreamPw-88aa',
  jwksPassword: 'JwksPw-19zz',
  flagPassword: 'FlagPw-4242',
};
const ALL = Object.values(SECRET);

function expectNoSecret(output: string, where: string): void {
  for (const s of ALL) expect(output.includes(s), `${where} shows the secret ${s}:\n${output}`).toBe(false);
}

const tmp = tempDir();
const agent = client();
let upstream: TestUpstream;
let redis: RedisServer;
let running: TestGateway | undefined;

beforeAll(async () => {
  upstream = await startUpstream();
  redis = await startRedisServer();
  // A real password on a real server: the gateway must connect with it and never show it.
  await redisCli(redis.port, 'CONFIG', 'SET', 'requirepass', SECRET.redisPassword);
});
afterAll(async () => {
  await running?.gateway.close();
  await upstream?.close();
  await redis?.stop();
  await agent.close();
  tmp.cleanup();
});

function io() {
  const out: string[] = [];
  const err: string[] = [];
  return {
    text: () => out.join('') + err.join(''),
    io: { out: (t: string) => out.push(t), err: (t: string) => err.push(t), onSignal: () => () => undefined },
  };
}

const TIERS = `rateLimiting:
  defaultTier: free
  tiers:
    free: { requestsPerMinute: 60, burstLimit: 10 }
`;

describe('sluice validate', () => {
  it('shows no secret in violations, given values or flag errors', async () => {
    const file = join(tmp.dir, 'bad.yaml');
    writeFileSync(
      file,
      `${TIERS}store:
  type: redis
  url: "http://default:${SECRET.redisPassword}@127.0.0.1:6379/0"
  sentinel: { name: main, nodes: ["127.0.0.1:26379"], password: ${SECRET.sentinelPassword} }
admin:
  token: ${SECRET.shortToken}
upstream:
  url: "ftp://svc:${SECRET.upstreamPassword}@127.0.0.1:1"
quota:
  webhook: { url: "http://hook:${SECRET.webhookPassword}@127.0.0.1:1/x", secret: 15 }
`,
    );
    const o = io();
    expect(await main(['validate', file], o.io)).toBe(1);
    const text = o.text();
    // Every violation is still reported where it is.
    expect(text).toMatch(/store\.url: .*got "http:\/\/default:\*\*\*@127\.0\.0\.1:6379\/0"/);
    expect(text).toMatch(/store\.sentinel\.password: must be string, got \[redacted\]/);
    expect(text).toMatch(/admin\.token: must NOT have fewer than 16 characters, got \[redacted\]/);
    expect(text).toMatch(/upstream\.url: .*got "ftp:\/\/svc:\*\*\*@127\.0\.0\.1:1"/);
    expectNoSecret(text, 'sluice validate');

    const flag = io();
    expect(await main(['validate', file, '--upstream', `ftp://svc:${SECRET.flagPassword}@x`], flag.io)).toBe(
      2,
    );
    expect(flag.text()).toMatch(
      /--upstream must be an http:\/\/ or https:\/\/ URL, got "ftp:\/\/svc:\*\*\*@x"/,
    );
    expectNoSecret(flag.text(), 'a flag error');
  });

  it('shows no secret for a valid file with warnings', async () => {
    const file = join(tmp.dir, 'good.yaml');
    writeFileSync(
      file,
      `${TIERS}store:
  type: redis
  sentinel: { name: main, nodes: ["127.0.0.1:26379"], password: "${SECRET.sentinelPassword}" }
admin:
  host: 0.0.0.0
  token: ${SECRET.adminToken}
upstream:
  url: "http://svc:${SECRET.upstreamPassword}@127.0.0.1:1"
quota:
  webhook: { url: "http://hook:${SECRET.webhookPassword}@127.0.0.1:1/x", secret: ${SECRET.webhookSecret} }
`,
    );
    const o = io();
    expect(await main(['validate', file], o.io)).toBe(0);
    expect(o.text()).toMatch(/W_ADMIN_PLAINTEXT_PUBLIC/);
    expectNoSecret(o.text(), 'sluice validate');
  });
});

describe('a running gateway', () => {
  const yaml = (url: string, token: string) => `${TIERS}store:
  type: redis
  url: "${url}"
  timeout: 500ms
admin:
  port: 0
  token: "${token}"
identity:
  jwt: { jwksUrl: "https://jwks:${SECRET.jwksPassword}@127.0.0.1:1/jwks.json" }
quota:
  webhook: { url: "http://hook:${SECRET.webhookPassword}@127.0.0.1:1/x", secret: "\${WEBHOOK_SECRET}" }
`;

  it('shows no secret in its logs, its effective configuration, the dashboard or a failed reload', async () => {
    const redisUrl = `redis://default:\${REDIS_PASSWORD}@127.0.0.1:${redis.port}`;
    const t = await startGateway(join(tmp.dir, 'run.yaml'), {
      yaml: yaml(redisUrl, SECRET.adminToken),
      env: { REDIS_PASSWORD: SECRET.redisPassword, WEBHOOK_SECRET: SECRET.webhookSecret },
      overrides: { upstream: upstream.url.replace('http://', `http://svc:${SECRET.upstreamPassword}@`) },
    });
    running = t;
    const auth = { authorization: `Bearer ${SECRET.adminToken}` };
    // The store answers with the password: the gateway uses it, and only shows it masked.
    expect((await send(agent, `${t.gateway.url}/x`)).status).toBe(200);
    expect(await redisCli(redis.port, '-a', SECRET.redisPassword, '--no-auth-warning', 'DBSIZE')).not.toBe(
      '0',
    );

    const config = await send(agent, `${t.gateway.adminUrl}/config`, { headers: auth });
    expect(config.status).toBe(200);
    const c = config.json<{
      store: { redis: { url: string } };
      upstream: { url: string };
      admin: { token: string };
      quota: { webhook: { url: string; secret: string } };
    }>();
    expect(c.store.redis.url).toBe(`redis://default:***@127.0.0.1:${redis.port}`);
    expect(c.upstream.url).toMatch(/^http:\/\/svc:\*\*\*@127\.0\.0\.1:\d+$/);
    expect(c.admin.token).toBe('[redacted]');
    expect(c.quota.webhook).toEqual({
      url: 'http://hook:***@127.0.0.1:1/x',
      secret: '[redacted]',
      headerPrefix: 'x-sluice',
    });
    expectNoSecret(config.text, 'GET /config');
    const state = await send(agent, `${t.gateway.adminUrl}/dashboard/state`, { headers: auth });
    expect(state.status).toBe(200);
    expectNoSecret(state.text, 'GET /dashboard/state');

    // A broken file: the store URL's scheme, a short token. Each violation is logged; no secret is.
    writeFileSync(t.file, yaml(redisUrl.replace('redis://', 'http://'), SECRET.shortToken));
    const result = await t.gateway.reload();
    expect(result.ok).toBe(false);
    expect(result.violations.map((v) => v.path)).toEqual(['store.url', 'admin.token']);
    expectNoSecret(JSON.stringify(result.violations), 'the reload result');
    const logs = t.logs.lines.map((l) => JSON.stringify(l)).join('\n');
    expect(logs).toMatch(/sluice gateway listening/);
    expect(logs).toMatch(/invalid configuration: .*got \\"http:\/\/default:\*\*\*@127\.0\.0\.1/);
    expect(logs).toMatch(/configuration reload rejected/);
    expectNoSecret(logs, 'the log');
  });
});

describe('the admin API and the dashboard configuration view', () => {
  it('redact every kind of secret, for a Sentinel store too', async () => {
    const loaded = loadConfigText(
      `${TIERS}store:
  type: redis
  sentinel: { name: main, nodes: ["127.0.0.1:26379"], password: "${SECRET.sentinelPassword}" }
admin: { token: "${SECRET.adminToken}" }
upstream: { url: "http://svc:${SECRET.upstreamPassword}@127.0.0.1:1" }
identity:
  jwt: { jwksUrl: "https://jwks:${SECRET.jwksPassword}@127.0.0.1:1/jwks.json" }
quota:
  webhook: { url: "http://hook:${SECRET.webhookPassword}@127.0.0.1:1/x", secret: ${SECRET.webhookSecret} }
`,
      undefined,
    );
    expect(loaded.violations).toEqual([]);
    const config = loaded.config!;
    const target = { config, inspect: async () => [], resetKey: async () => undefined };
    const dashboard = new Dashboard(
      { config, store: new MemoryStore(), inflight: 0 },
      { rates: new RateWindow() },
    );
    const server = new AdminServer(target, SECRET.adminToken, dashboard);
    const base = `http://127.0.0.1:${await server.listen('127.0.0.1', 0)}`;
    try {
      const auth = { authorization: `Bearer ${SECRET.adminToken}` };
      const c = await send(agent, `${base}/config`, { headers: auth });
      expect(c.status).toBe(200);
      expect(
        c.json<{ store: { redis: { sentinel: { password: string } } } }>().store.redis.sentinel.password,
      ).toBe('[redacted]');
      expectNoSecret(c.text, 'GET /config');
      const state = await send(agent, `${base}/dashboard/state`, { headers: auth });
      expectNoSecret(state.text, 'GET /dashboard/state');
    } finally {
      await server.close();
    }
  });
});
