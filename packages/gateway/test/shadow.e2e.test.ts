import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfigText } from '../src/config/load-config.js';
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
 * Shadow tiers and endpoint rules: their buckets are counted and their would-be denials show in the metrics as
 * `shadow_limited`, but they never deny; enforcing tiers keep denying. The clock is frozen, so nothing refills.
 */

const tmp = tempDir();
const agent = client();
let upstream: TestUpstream;
let t: TestGateway;

const YAML = (url: string, reportsShadow: boolean) => `rateLimiting:
  defaultTier: standard
  tiers:
    standard: { requestsPerMinute: 60, burstLimit: 8 }
    trial: { requestsPerMinute: 60, burstLimit: 1, shadow: true }
  endpoints:
    - pattern: "/api/reports/*"
      name: reports
      limit: 2
      window: 60s
      shadow: ${reportsShadow}
server:
  trustedProxies: [loopback]
identity:
  headers: {}
upstream: { url: "${url}" }
`;

const who = (client: string, tier?: string) => ({
  'x-tenant-id': 't',
  'x-client-id': client,
  ...(tier === undefined ? {} : { 'x-rate-limit-tier': tier }),
});

/** The value of one `sluice_decisions_total` series, 0 when absent. */
function decisions(text: string, policy: string, outcome: string): number {
  for (const line of text.split('\n')) {
    if (!line.startsWith('sluice_decisions_total{')) continue;
    if (line.includes(`policy="${policy}"`) && line.includes(`outcome="${outcome}"`))
      return Number(line.slice(line.lastIndexOf(' ') + 1));
  }
  return 0;
}

beforeAll(async () => {
  upstream = await startUpstream();
  t = await startGateway(join(tmp.dir, 'shadow.yaml'), { yaml: YAML(upstream.url, true) });
});

afterAll(async () => {
  await t?.gateway.close();
  await upstream?.close();
  await agent.close();
  tmp.cleanup();
});

describe('shadow tiers and endpoint rules', () => {
  it('reads shadow per tier and endpoint rule, false by default', () => {
    const loaded = loadConfigText(YAML('http://127.0.0.1:1', false), undefined);
    if (!loaded.ok) throw new Error(JSON.stringify(loaded.violations));
    expect(loaded.config.tiers.trial?.shadow).toBe(true);
    expect(loaded.config.tiers.standard?.shadow).toBe(false);
    expect(loaded.config.endpoints[0]?.shadow).toBe(false);
  });

  it('refuses a shadow flag that is not a boolean', () => {
    const loaded = loadConfigText(
      YAML('http://127.0.0.1:1', false).replace('shadow: false', 'shadow: yes please'),
      undefined,
    );
    expect(loaded.ok).toBe(false);
  });

  it('refuses rules sharing a class that disagree on shadow, and a shadow public-auth class', () => {
    const yaml = `rateLimiting:
  defaultTier: standard
  tiers: { standard: { requestsPerMinute: 60 } }
  endpoints:
    - { pattern: "/a", class: rl.write }
    - { pattern: "/b", class: rl.write, shadow: true }
    - { pattern: "/login", class: rl.public_auth, shadow: true }
ratelimit:
  rl.write: { per_minute: 10, burst: 10 }
  rl.public_auth: { per_minute: 10, burst: 10 }
`;
    const loaded = loadConfigText(yaml, undefined);
    expect(loaded.ok).toBe(false);
    if (loaded.ok) return;
    const byPath = loaded.violations.map((v) => [v.path, v.message]);
    expect(byPath).toEqual([
      ['rateLimiting.endpoints[1].shadow', expect.stringContaining('must agree on "shadow"')],
      ['rateLimiting.endpoints[2].shadow', expect.stringContaining('cannot be a shadow')],
    ]);
  });

  it('lets requests over a shadow rule through and counts them as shadow denials', async () => {
    const url = `${t.gateway.url}/api/reports/daily`;
    const replies = [];
    for (let i = 0; i < 4; i++) replies.push(await send(agent, url, { headers: who('a') }));
    expect(replies.map((r) => r.status)).toEqual([200, 200, 200, 200]);
    // Proxied: the upstream answered every one of them.
    expect(replies.every((r) => r.headers['x-upstream'] === 'yes')).toBe(true);
    // The shadow rule is left out of the headers: only the tier's policy is advertised.
    expect(String(replies[3]?.headers['ratelimit-policy'])).not.toContain('reports');
    const metrics = (await send(agent, `${t.gateway.url}/metrics`)).text;
    expect(decisions(metrics, 'reports', 'shadow_limited')).toBe(2);
    expect(decisions(metrics, 'reports', 'limited')).toBe(0);
    expect(metrics).not.toMatch(/rate_limit_exceeded_total\{[^}]*policy="reports"/);
  });

  it('never denies a client of a shadow tier', async () => {
    const statuses = [];
    for (let i = 0; i < 3; i++)
      statuses.push((await send(agent, `${t.gateway.url}/x`, { headers: who('c', 'trial') })).status);
    expect(statuses).toEqual([200, 200, 200]);
    const metrics = (await send(agent, `${t.gateway.url}/metrics`)).text;
    expect(decisions(metrics, 'trial', 'shadow_limited')).toBe(2);
  });

  it('still denies over an enforcing tier', async () => {
    const statuses = [];
    for (let i = 0; i < 9; i++)
      statuses.push((await send(agent, `${t.gateway.url}/x`, { headers: who('b') })).status);
    expect(statuses).toEqual([...Array(8).fill(200), 429]);
    const metrics = (await send(agent, `${t.gateway.url}/metrics`)).text;
    expect(decisions(metrics, 'standard', 'limited')).toBe(1);
  });

  it('enforces a rule once a reload turns its shadow flag off', async () => {
    writeFileSync(t.file, YAML(upstream.url, false));
    expect((await t.gateway.reload()).ok).toBe(true);
    // A changed flag is a new policy with a full bucket: what the shadow counted is not held against client a
    // (whose tier bucket of 8 still has 4 tokens).
    const statuses = [];
    for (let i = 0; i < 3; i++)
      statuses.push((await send(agent, `${t.gateway.url}/api/reports/daily`, { headers: who('a') })).status);
    expect(statuses).toEqual([200, 200, 429]);
  });

  it('stops denying once a reload turns the shadow flag back on', async () => {
    writeFileSync(t.file, YAML(upstream.url, true));
    expect((await t.gateway.reload()).ok).toBe(true);
    const r = await send(agent, `${t.gateway.url}/api/reports/daily`, { headers: who('a') });
    expect(r.status).toBe(200);
  });
});
