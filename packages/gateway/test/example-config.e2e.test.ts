import { copyFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import {
  client,
  send,
  startGateway,
  startUpstream,
  statuses,
  type TestGateway,
  type TestUpstream,
  tempDir,
  WALL_MS,
} from './support.js';

// The design document's example file, byte for byte, with only the upstream and port given as flags.
const EXAMPLE = fileURLToPath(new URL('../examples/rate-limits.yaml', import.meta.url));
const EPOCH = WALL_MS / 1000;

const tmp = tempDir();
const agent = client();
let upstream: TestUpstream;
let t: TestGateway;
let base: string;

beforeAll(async () => {
  upstream = await startUpstream();
});
afterAll(async () => {
  await upstream.close();
  await agent.close();
  tmp.cleanup();
});
beforeEach(async () => {
  const file = join(tmp.dir, 'rate-limits.yaml');
  copyFileSync(EXAMPLE, file);
  t = await startGateway(file, { overrides: { upstream: upstream.url } });
  base = t.gateway.url;
});
afterEach(async () => {
  await t.gateway.close();
});

describe('the example configuration, end to end', () => {
  it('proxies with exact draft-11 and legacy headers for the tier and the matching endpoint rule', async () => {
    const r = await send(agent, `${base}/api/risk/simulation/run?x=1`);
    expect(r.status).toBe(200);
    expect(r.json()).toMatchObject({ method: 'GET', url: '/api/risk/simulation/run?x=1' });
    expect(r.headers['ratelimit-policy']).toBe(
      '"standard";q=300;w=60, "standard.hour";q=10000;w=3600, "/api/risk/simulation/*";q=30;w=60',
    );
    expect(r.headers.ratelimit).toBe(
      '"standard";r=49;t=1, "standard.hour";r=9999;t=1, "/api/risk/simulation/*";r=29;t=2',
    );
    expect(r.headers['x-ratelimit-limit']).toBe('30');
    expect(r.headers['x-ratelimit-remaining']).toBe('29');
    expect(r.headers['x-ratelimit-reset']).toBe(String(EPOCH + 2));
    expect(r.headers['x-ratelimit-policy']).toBe('/api/risk/simulation/*');
    expect(r.headers['retry-after']).toBeUndefined();
  });

  it('admits the standard burst of 50 at a frozen clock, then answers 429 with the problem body', async () => {
    const codes = await statuses(agent, `${base}/other`, 50);
    expect(codes.every((c) => c === 200)).toBe(true);
    const r = await send(agent, `${base}/other?secret=1`, { headers: { 'x-request-id': 'req-51' } });
    expect(r.status).toBe(429);
    expect(r.headers['content-type']).toBe('application/problem+json');
    expect(r.headers['retry-after']).toBe('1');
    expect(r.headers['x-request-id']).toBe('req-51');
    expect(r.headers.ratelimit).toBe('"standard";r=0;t=10, "standard.hour";r=9950;t=18');
    expect(r.headers['x-ratelimit-limit']).toBe('300');
    expect(r.headers['x-ratelimit-remaining']).toBe('0');
    expect(r.headers['x-ratelimit-reset']).toBe(String(EPOCH + 10));
    expect(r.headers['x-ratelimit-policy']).toBe('standard');
    expect(r.json()).toEqual({
      type: 'about:blank',
      title: 'Too Many Requests',
      status: 429,
      detail:
        'Rate limit "standard" exceeded: bursts of up to 50 requests, refilled at 300 per minute; retry in 1 s.',
      instance: '/other',
      code: 'rate_limited',
      limit: 300,
      remaining: 0,
      reset: EPOCH + 10,
      retryAfter: 1,
      'violated-policies': ['standard'],
      correlation_id: 'req-51',
    });
    expect(upstream.seen.filter((s) => s.url?.startsWith('/other?secret')).length).toBe(0);
    t.clock.advance(200); // one token at 5 per second
    expect((await send(agent, `${base}/other`)).status).toBe(200);
    expect((await send(agent, `${base}/other`)).status).toBe(429);
  });

  it('limits /api/risk/simulation/studio/* to 10 per 60 s on top of the overlapping rule, all or nothing', async () => {
    const codes = await statuses(agent, `${base}/api/risk/simulation/studio/run`, 11);
    expect(codes).toEqual([...Array(10).fill(200), 429]);
    const r = await send(agent, `${base}/api/risk/simulation/studio/run`);
    expect(r.status).toBe(429);
    expect(r.headers['retry-after']).toBe('6');
    expect(r.json()).toMatchObject({
      detail:
        'Rate limit "/api/risk/simulation/studio/*" exceeded: bursts of up to 10 requests, refilled at 10 per minute; retry in 6 s.',
      limit: 10,
      retryAfter: 6,
      'violated-policies': ['/api/risk/simulation/studio/*'],
    });
    // The denials took nothing from the tier or the wider rule: 10 requests spent 10 tokens of each.
    const buckets = await t.gateway.inspect('ip:127.0.0.1');
    const byName = Object.fromEntries(buckets.map((b) => [b.policy, b.remaining]));
    expect(byName).toMatchObject({
      standard: 40,
      'standard.hour': 9990,
      '/api/risk/simulation/*': 20,
      '/api/risk/simulation/studio/*': 0,
    });
    // The wider rule still admits other simulation paths.
    expect((await send(agent, `${base}/api/risk/simulation/run`)).headers.ratelimit).toContain(
      '"/api/risk/simulation/*";r=19;t=22',
    );
    t.clock.advance(6000);
    expect((await send(agent, `${base}/api/risk/simulation/studio/run`)).status).toBe(200);
  });

  it('limits /system/airgap/seal to 5 per hour', async () => {
    const codes: number[] = [];
    for (let i = 0; i < 6; i++)
      codes.push((await send(agent, `${base}/system/airgap/seal`, { method: 'POST', body: '{}' })).status);
    expect(codes).toEqual([200, 200, 200, 200, 200, 429]);
    const r = await send(agent, `${base}/system/airgap/seal`, { method: 'POST', body: '{}' });
    expect(r.headers['retry-after']).toBe('720');
    expect(r.json()).toMatchObject({
      detail:
        'Rate limit "/system/airgap/seal" exceeded: bursts of up to 5 requests, refilled at 5 per hour; retry in 720 s.',
      limit: 5,
      retryAfter: 720,
    });
    t.clock.advance(719_000);
    expect((await send(agent, `${base}/system/airgap/seal`, { method: 'POST' })).status).toBe(429);
    t.clock.advance(1_000);
    expect((await send(agent, `${base}/system/airgap/seal`, { method: 'POST' })).status).toBe(200);
  });

  it('matches rules on the normalized path, so encoding and dot segments do not slip past', async () => {
    await statuses(agent, `${base}/api/risk/simulation/studio/a`, 10);
    for (const p of [
      '/api/risk/simulation/%73tudio/a',
      '/api//risk/simulation/./studio/a',
      '/api/risk/x/../simulation/studio/a',
    ]) {
      expect((await send(agent, `${base}${p}`)).status).toBe(429);
    }
  });

  it('serves exempt endpoints without limits and its own health, readiness and metrics', async () => {
    const codes = await statuses(agent, `${base}/.well-known/openid-configuration`, 60);
    expect(codes.every((c) => c === 200)).toBe(true);
    const wk = await send(agent, `${base}/.well-known/x`);
    expect(wk.headers.ratelimit).toBeUndefined();
    expect((await send(agent, `${base}/health`)).json()).toEqual({ status: 'ok' });
    expect((await send(agent, `${base}/ready`)).json()).toEqual({ status: 'ready', store: 'memory' });
    await send(agent, `${base}/api/risk/simulation/studio/z`);
    const m = await send(agent, `${base}/metrics`);
    expect(m.headers['content-type']).toMatch(/^text\/plain/);
    expect(m.text).toMatch(/sluice_exempt_total\{[^}]*reason="endpoint"[^}]*\} 6[0-9]/);
    expect(m.text).toMatch(/sluice_decisions_total\{/);
    expect(m.text).not.toContain('127.0.0.1');
  });
});
