import { Readable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfigText } from '../src/config/load-config.js';
import { Gateway } from '../src/gateway/gateway.js';
import { createLogger } from '../src/log/create-logger.js';
import { fieldMap } from '../src/replay/json-fields.js';
import { outcomeOf } from '../src/replay/replay-engine.js';
import type { ReplayOutcome } from '../src/replay/replay-outcome.js';
import { admitted } from '../src/replay/replay-outcome.js';
import { runReplay } from '../src/replay/replay-run.js';
import { client, LogCapture, send, startUpstream, type TestUpstream } from './support.js';

/*
 * Replay's decisions against a live gateway's: a gateway on the real clock answers a mixed sequence of requests
 * (several client addresses, identity headers with tiers, endpoint rules, an exempt endpoint, an unlimited tier);
 * the same requests are then replayed from a JSON log written here with their send times, and from the gateway's
 * own request log. Refill is slow (a token every 10 s or more) and the run takes a second or two, so no decision
 * depends on the milliseconds between the gateway's clock and the logged times.
 */
const YAML = `rateLimiting:
  enabled: true
  defaultTier: free
  tiers:
    free: { requestsPerMinute: 6, burstLimit: 5 }
    pro: { requestsPerMinute: 6, burstLimit: 9 }
    internal: { unlimited: true }
  endpoints:
    - pattern: /api/studio/*
      limit: 3
      window: 60s
    - pattern: /api/seal
      limit: 1
      window: 3600s
server: { trustedProxies: [loopback] }
identity:
  headers: {}
exemptions:
  endpoints: ["GET /api/public/*"]
logging: { level: info }
`;

interface Sent {
  readonly ts: number;
  readonly method: string;
  readonly path: string;
  readonly client: string;
  readonly tenant?: string;
  readonly user?: string;
  readonly tier?: string;
  status: number;
}

/** A seeded sequence of requests, the same every run. */
function scenario(): Omit<Sent, 'ts' | 'status'>[] {
  let seed = 27;
  const rnd = () => {
    seed = (seed * 1_103_515_245 + 12_345) % 2_147_483_648;
    return seed / 2_147_483_648;
  };
  const paths: [string, string][] = [
    ['GET', '/api/items/1'],
    ['POST', '/api/studio/run'],
    ['POST', '/api/studio/run/2'],
    ['POST', '/api/seal'],
    ['GET', '/api/public/status'],
    ['GET', '/api/./items/%32'],
  ];
  const callers = [
    { client: '198.51.100.1' },
    { client: '198.51.100.2' },
    { client: '2001:db8::7' },
    { client: '198.51.100.3', tenant: 'acme', user: 'alice', tier: 'pro' },
    { client: '198.51.100.3', tenant: 'acme', user: 'bob' },
    { client: '198.51.100.4', tenant: 'ops', user: 'robot', tier: 'internal' },
  ];
  return Array.from({ length: 120 }, () => {
    const [method, path] = paths[Math.floor(rnd() * paths.length)];
    return { method, path, ...callers[Math.floor(rnd() * callers.length)] };
  });
}

let upstream: TestUpstream;
let gateway: Gateway;
const logs = new LogCapture();
const agent = client();
const sent: Sent[] = [];
const config = () => {
  const r = loadConfigText(YAML, 'cross-check.yaml', { env: {} });
  if (!r.ok) throw new Error(JSON.stringify(r.violations));
  return r.config;
};

beforeAll(async () => {
  upstream = await startUpstream();
  const c = config();
  gateway = await Gateway.start({
    config: {
      ...c,
      upstream: { ...c.upstream, url: upstream.url },
      server: { ...c.server, port: 0, host: '127.0.0.1' },
    },
    logger: createLogger('info', logs),
    watch: false,
  });
  for (const r of scenario()) {
    const headers: Record<string, string> = { 'x-forwarded-for': r.client };
    if (r.tenant !== undefined) headers['x-tenant-id'] = r.tenant;
    if (r.user !== undefined) headers['x-user-id'] = r.user;
    if (r.tier !== undefined) headers['x-rate-limit-tier'] = r.tier;
    const ts = Date.now();
    const reply = await send(agent, `${gateway.url}${r.path}`, { method: r.method, headers });
    sent.push({ ...r, ts, status: reply.status });
  }
});

afterAll(async () => {
  await gateway?.close();
  await upstream?.close();
  await agent.close();
});

async function replayed(text: string, fields: string[] = []): Promise<ReplayOutcome[]> {
  const out: ReplayOutcome[] = [];
  await runReplay({
    config: { name: 'cross-check', config: config() },
    logs: [{ name: 'log', open: () => Readable.from([Buffer.from(text)]) }],
    fields: fieldMap(fields),
    onDecision: (_r, d) => {
      if (d instanceof Promise) throw new Error('no request waits in this configuration');
      out.push(outcomeOf(d));
    },
  });
  return out;
}

const live = () =>
  sent.map((s) => (s.status === 429 ? 'limited' : s.status === 200 ? 'admitted' : `status ${s.status}`));
const asLive = (o: ReplayOutcome[]) =>
  o.map((x) => (x === 'limited' ? 'limited' : admitted(x) ? 'admitted' : x));

describe('replay against a live gateway', () => {
  it('the scenario limits some requests and admits others, for several reasons', () => {
    const l = live();
    expect(l.filter((x) => x === 'limited').length).toBeGreaterThan(20);
    expect(l.filter((x) => x === 'admitted').length).toBeGreaterThan(20);
    expect(l.every((x) => x === 'limited' || x === 'admitted')).toBe(true);
  });

  it('decides a JSON log of the same requests exactly as the gateway did', async () => {
    const text = sent.map(({ status: _, ...s }) => JSON.stringify(s)).join('\n');
    expect(asLive(await replayed(text, ['user=user']))).toEqual(live());
  });

  it("decides the gateway's own request log exactly as the gateway did", async () => {
    const lines = logs.lines.filter((l) => l.msg === 'request');
    expect(lines.map((l) => (l.status === 429 ? 'limited' : 'admitted'))).toEqual(live());
    const text = logs.lines.map((l) => JSON.stringify(l)).join('\n');
    const got = asLive(await replayed(text));
    const diff = got.flatMap((g, i) => (g === live()[i] ? [] : [[i, g, JSON.stringify(lines[i])]]));
    expect(diff).toEqual([]);
  });
});
