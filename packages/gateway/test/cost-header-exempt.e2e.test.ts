import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import {
  client,
  send,
  startGateway,
  startUpstream,
  type TestGateway,
  type TestUpstream,
  tempDir,
} from './support.js';

/**
 * An upstream cost header (`cost.header` without `keepHeader: true`) is removed from every answer on a route whose
 * rule names it, whatever the admission: limited, or exempt by an unlimited override, an unlimited tier, an exempt
 * endpoint or `enabled: false`.
 */

const tmp = tempDir();
const agent = client();
let upstream: TestUpstream;
let running: TestGateway | undefined;

const yaml = (enabled: boolean) => `rateLimiting:
  enabled: ${enabled}
  defaultTier: free
  tiers:
    free: { requestsPerMinute: 600, burstLimit: 100 }
    gold: { unlimited: true }
  endpoints:
    - { pattern: /cost/*, name: units, limit: 100, window: 3600s, cost: { header: X-Cost, fallback: 1 } }
    - { pattern: /public/cost/*, name: public-units, limit: 100, window: 3600s, cost: { header: X-Cost } }
    - { pattern: /kept/*, name: kept, limit: 100, window: 3600s, cost: { header: X-Cost, keepHeader: true } }
server: { trustedProxies: [loopback] }
identity: { headers: {} }
exemptions: { endpoints: ["/public/*"] }
`;

beforeAll(async () => {
  upstream = await startUpstream();
  upstream.handler = (_req, res) => {
    res.writeHead(200, { 'x-cost': '5', 'content-type': 'text/plain' });
    res.end('ok');
  };
});
afterEach(async () => {
  await running?.gateway.close();
  running = undefined;
});
afterAll(async () => {
  await upstream.close();
  await agent.close();
  tmp.cleanup();
});

async function costHeader(path: string, headers: Record<string, string> = {}) {
  const r = await send(agent, `${running!.gateway.url}${path}`, { headers });
  expect(r.status, path).toBe(200);
  return r.headers['x-cost'];
}

describe('an upstream cost header', () => {
  it('is removed for limited and exempt callers alike on a route whose rule names it', async () => {
    running = await startGateway(join(tmp.dir, 'on.yaml'), {
      yaml: yaml(true),
      overrides: { upstream: upstream.url },
    });
    expect(await costHeader('/cost/a')).toBeUndefined();
    expect(await costHeader('/cost/a', { 'x-rate-limit-tier': 'gold' })).toBeUndefined();
    expect(await costHeader('/public/cost/a')).toBeUndefined();
    await running.gateway.overrides.set(
      { pattern: 'ip:198.18.95.1', unlimited: true, reason: 'load test' },
      'ops',
    );
    expect(await costHeader('/cost/a', { 'x-forwarded-for': '198.18.95.1' })).toBeUndefined();
    // Routes no rule names, and a rule that keeps it, forward it as the upstream sent it.
    expect(await costHeader('/other')).toBe('5');
    expect(await costHeader('/public/other')).toBe('5');
    expect(await costHeader('/kept/a', { 'x-rate-limit-tier': 'gold' })).toBe('5');
  });

  it('is removed when limiting is switched off', async () => {
    running = await startGateway(join(tmp.dir, 'off.yaml'), {
      yaml: yaml(false),
      overrides: { upstream: upstream.url },
    });
    expect(await costHeader('/cost/a')).toBeUndefined();
    expect(await costHeader('/other')).toBe('5');
  });
});
