import { once } from 'node:events';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { ReloadResult } from '../src/gateway/gateway.js';
import {
  client,
  echo,
  makeCertificates,
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

const config = (burst: number, extra = '') => `rateLimiting:
  defaultTier: free
  tiers:
    free: { requestsPerMinute: 60, burstLimit: ${burst} }
  endpoints:
    - { pattern: /limited/*, limit: 2, window: 60s }
admin:
  port: 0
  token: \${ADMIN_TOKEN}
${extra}`;

beforeAll(async () => {
  upstream = await startUpstream();
});
afterAll(async () => {
  await upstream.close();
  await agent.close();
  tmp.cleanup();
});
afterEach(async () => {
  upstream.handler = echo;
  await running?.gateway.close();
  running = undefined;
});

async function start(yaml: string, watch = false): Promise<TestGateway> {
  running = await startGateway(join(tmp.dir, 'ops.yaml'), {
    yaml,
    env: { ADMIN_TOKEN: TOKEN },
    overrides: { upstream: upstream.url },
    watch,
  });
  return running;
}

describe('admin listener', () => {
  it('requires the bearer token, inspects and resets keys, and shows the effective configuration redacted', async () => {
    const t = await start(config(5));
    const admin = t.gateway.adminUrl as string;
    expect(admin).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    expect((await send(agent, `${admin}/config`)).status).toBe(401);
    expect(
      (await send(agent, `${admin}/config`, { headers: { authorization: 'Bearer wrong' } })).status,
    ).toBe(401);
    const auth = { authorization: `Bearer ${TOKEN}` };
    await statuses(agent, `${t.gateway.url}/limited/a`, 2);
    const key = encodeURIComponent('ip:127.0.0.1');
    const view = (await send(agent, `${admin}/keys/${key}`, { headers: auth })).json<{
      key: string;
      buckets: { policy: string; remaining: number }[];
    }>();
    expect(view.key).toBe('ip:127.0.0.1');
    expect(view.buckets).toEqual([
      { policy: 'free', quota: 60, window: 60, burst: 5, remaining: 3, resetSeconds: 2 },
      { policy: '/limited/*', quota: 2, window: 60, burst: 2, remaining: 0, resetSeconds: 60 },
      { policy: 'rl.public_auth', quota: 10, window: 60, burst: 10, remaining: 10, resetSeconds: 0 },
    ]);
    expect((await send(agent, `${t.gateway.url}/limited/a`)).status).toBe(429);
    expect((await send(agent, `${admin}/keys/${key}`, { method: 'DELETE', headers: auth })).status).toBe(204);
    expect((await send(agent, `${t.gateway.url}/limited/a`)).status).toBe(200);
    const cfg = (await send(agent, `${admin}/config`, { headers: auth })).json<
      Record<string, Record<string, unknown>>
    >();
    expect(cfg.admin.token).toBe('[redacted]');
    expect(JSON.stringify(cfg)).not.toContain(TOKEN);
    expect(cfg.tiers).toMatchObject({ free: { burst: 5 } });
    expect((await send(agent, `${admin}/nope`, { headers: auth })).status).toBe(404);
  });

  it('logs one JSON line per request with its request id', async () => {
    const t = await start(config(5));
    await send(agent, `${t.gateway.url}/limited/a`, { headers: { 'x-request-id': 'trace-42' } });
    await send(agent, `${t.gateway.url}/limited/a`, { headers: { 'x-request-id': 'bad id with spaces' } });
    const requests = t.logs.lines.filter((l) => l.msg === 'request');
    expect(requests[0]).toMatchObject({
      service: 'sluice',
      reqId: 'trace-42',
      method: 'GET',
      url: '/limited/a',
      status: 200,
      outcome: 'proxied',
      key: 'ip:127.0.0.1',
      tier: 'free',
    });
    // An unsafe incoming id is replaced, not echoed.
    expect(requests[1].reqId).toMatch(/^[0-9a-f-]{36}$/);
    expect(upstream.seen.at(-1)?.headers['x-request-id']).toBe(requests[1].reqId);
  });
});

describe('hot reload', () => {
  it('applies a valid file and keeps bucket state of unchanged policies', async () => {
    const t = await start(config(5));
    await statuses(agent, `${t.gateway.url}/limited/a`, 2);
    await statuses(agent, `${t.gateway.url}/x`, 1);
    writeFileSync(t.file, config(5, 'headers: { mode: legacy }\n').replace('limit: 2', 'limit: 4'));
    const result = await t.gateway.reload();
    expect(result).toEqual({ ok: true, violations: [], restartRequired: [] });
    const r = await send(agent, `${t.gateway.url}/x`);
    // "free" kept its state (5 - 3 - 1 = 1 left) and the header mode changed.
    expect(r.headers['x-ratelimit-remaining']).toBe('1');
    expect(r.headers.ratelimit).toBeUndefined();
    // The changed rule starts fresh with its new limit.
    expect((await t.gateway.inspect('ip:127.0.0.1')).find((b) => b.policy === '/limited/*')).toMatchObject({
      quota: 4,
      remaining: 4,
    });
  });

  it('keeps the old configuration on an invalid file and logs every violation', async () => {
    const t = await start(config(5));
    writeFileSync(
      t.file,
      config(5)
        .replace('burstLimit: 5', 'burstLimit: 0')
        .replace('window: 60s', 'window: soon')
        .replace('admin:', 'admn:'),
    );
    const result = await t.gateway.reload();
    expect(result.ok).toBe(false);
    expect(result.violations.map((v) => `${v.line} ${v.path}`)).toEqual([
      '4 rateLimiting.tiers.free.burstLimit',
      '6 rateLimiting.endpoints[0].window',
      '7 admn',
    ]);
    const logged = t.logs.lines.filter((l) => l.level === 50).map((l) => l.path);
    expect(logged).toEqual(
      expect.arrayContaining([
        'rateLimiting.tiers.free.burstLimit',
        'rateLimiting.endpoints[0].window',
        'admn',
      ]),
    );
    expect((await send(agent, `${t.gateway.url}/x`)).headers.ratelimit).toBe('"free";r=4;t=1');
    expect(t.gateway.config.tiers.free.burst).toBe(5);
  });

  it('reloads when the file changes', async () => {
    const t = await start(config(5), true);
    const reloaded = once(t.gateway, 'reload');
    writeFileSync(t.file, config(7));
    const [result] = (await reloaded) as [ReloadResult];
    expect(result.ok).toBe(true);
    expect((await send(agent, `${t.gateway.url}/x`)).headers.ratelimit).toBe('"free";r=6;t=1');
  });

  it('reports settings that need a restart', async () => {
    const t = await start(config(5));
    writeFileSync(t.file, config(5, 'store: { type: memory, timeout: 1s }\n'));
    expect((await t.gateway.reload()).restartRequired).toEqual(['store']);
  });
});

describe('graceful shutdown', () => {
  it('drains requests in flight, keeps answering the probes (live, not ready) and refuses new requests', async () => {
    const t = await start(config(50));
    const held: (() => void)[] = [];
    let arrived!: () => void;
    const allArrived = new Promise<void>((r) => {
      arrived = r;
    });
    upstream.handler = (req, res) => {
      req.resume();
      held.push(() => res.end(`done ${req.url}`));
      if (held.length === 3) arrived();
    };
    const slowAgents = [client(), client(), client()];
    const inflight = slowAgents.map((a, i) => send(a, `${t.gateway.url}/slow/${i}`));
    await allArrived;
    expect(t.gateway.inflight).toBe(3);
    const closing = t.gateway.close();
    // While the three requests finish, a new connection gets the probes' answers and nothing else.
    const late = client();
    expect((await send(late, `${t.gateway.url}/health`)).status).toBe(200);
    const ready = await send(late, `${t.gateway.url}/ready`);
    expect([ready.status, ready.json()]).toEqual([503, { status: 'draining' }]);
    const refused = await send(late, `${t.gateway.url}/late`);
    expect([refused.status, refused.headers.connection]).toEqual([503, 'close']);
    expect(refused.json()).toMatchObject({ code: 'shutting_down', instance: '/late' });
    expect(upstream.seen.some((r) => r.url === '/late')).toBe(false);
    await late.close();
    for (const release of held) release();
    const replies = await Promise.all(inflight);
    expect(replies.map((r) => [r.status, r.text])).toEqual([
      [200, 'done /slow/0'],
      [200, 'done /slow/1'],
      [200, 'done /slow/2'],
    ]);
    await closing;
    running = undefined;
    for (const a of slowAgents) await a.close();
    expect(t.logs.lines.some((l) => l.msg === 'draining requests in flight' && l.inflight === 3)).toBe(true);
  });

  it('over TLS too, a connection opened during the drain gets the probes and nothing else', async () => {
    const certs = makeCertificates(tmp.dir);
    const t = await start(config(50, 'server:\n  tls: { cert: server.pem, key: server.key }\n'));
    let release!: () => void;
    const arrived = new Promise<void>((r) => {
      upstream.handler = (req, res) => {
        req.resume();
        release = () => res.end('slow done');
        r();
      };
    });
    const tlsClient = () => client({ ca: readFileSync(certs['ca.pem'] as string) });
    const [slowAgent, late] = [tlsClient(), tlsClient()];
    const slow = send(slowAgent, `${t.gateway.url}/slow`);
    await arrived;
    const closing = t.gateway.close();
    expect((await send(late, `${t.gateway.url}/health`)).status).toBe(200);
    const refused = await send(late, `${t.gateway.url}/late`);
    expect([refused.status, refused.json<{ code: string }>().code]).toEqual([503, 'shutting_down']);
    release();
    expect((await slow).text).toBe('slow done');
    await closing;
    running = undefined;
    await Promise.all([slowAgent.close(), late.close()]);
  });
});
