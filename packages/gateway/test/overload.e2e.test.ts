import type { IncomingMessage, ServerResponse } from 'node:http';
import { join } from 'node:path';
import { Agent, request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startGateway, startUpstream, type TestGateway, type TestUpstream, tempDir } from './support.js';

const LIMIT = 20;

/**
 * An upstream whose latency grows with its load: 10 ms per request up to 10 at once, proportionally slower
 * beyond (latency = 10 ms x in flight / 10); it counts the most it ever held at once.
 */
class LoadedUpstream {
  inFlight = 0;
  most = 0;
  handler = (req: IncomingMessage, res: ServerResponse): void => {
    this.inFlight++;
    this.most = Math.max(this.most, this.inFlight);
    req.resume();
    const delay = 10 * Math.max(1, this.inFlight / 10);
    setTimeout(() => {
      this.inFlight--;
      res.end('ok');
    }, delay);
  };
}

const who = (tier: string, client: string) => ({
  'x-tenant-id': 't',
  'x-client-id': client,
  'x-rate-limit-tier': tier,
});

describe('load shedding at the gateway', () => {
  const { dir, cleanup } = tempDir();
  const agent = new Agent({ connections: 200, keepAliveTimeout: 1000 });
  let upstream: TestUpstream;
  let loaded: LoadedUpstream;
  let t: TestGateway;

  beforeAll(async () => {
    upstream = await startUpstream();
    loaded = new LoadedUpstream();
    upstream.handler = loaded.handler;
    t = await startGateway(join(dir, 'overload.yaml'), {
      yaml: `rateLimiting:
  defaultTier: free
  tiers:
    free: { requestsPerMinute: 600000, burstLimit: 100000, priority: sheddable }
    enterprise: { requestsPerMinute: 600000, burstLimit: 100000, priority: critical }
server:
  trustedProxies: [loopback]
identity:
  headers: {}
overload:
  maxInFlight: ${LIMIT}
  reserve: 0.2
  retryAfter: 1s
upstream:
  url: ${upstream.url}
  connections: 100
`,
    });
  });
  afterAll(async () => {
    await t.gateway.close();
    await agent.close();
    await upstream.close();
    cleanup();
  });

  async function get(tier: string, client: string) {
    const r = await request(`${t.gateway.url}/api/work`, { dispatcher: agent, headers: who(tier, client) });
    const text = await r.body.text();
    return { status: r.statusCode, headers: r.headers, text };
  }

  it('free load at three times capacity beside a trickle of critical requests: critical served, free shed', async () => {
    const free: number[] = [];
    let shedBody: { status: number; headers: Record<string, unknown>; text: string } | undefined;
    let running = true;
    // 60 free clients (three times the limit), each sending again as soon as it has its answer.
    const clients = Array.from({ length: 3 * LIMIT }, async (_, i) => {
      while (running) {
        const r = await get('free', `f${i}`);
        free.push(r.status);
        if (r.status === 503) shedBody ??= r;
      }
    });
    // A trickle of critical requests, one at a time, while the free load runs.
    const critical: number[] = [];
    for (let i = 0; i < 100; i++) critical.push((await get('enterprise', 'e1')).status);
    running = false;
    await Promise.all(clients);
    const ok = critical.filter((s) => s === 200).length;
    expect(ok / critical.length).toBeGreaterThanOrEqual(0.99);
    expect(loaded.most).toBeLessThanOrEqual(LIMIT);
    expect(free.filter((s) => s === 503).length).toBeGreaterThan(0);
    expect(free.filter((s) => s === 200).length).toBeGreaterThan(0);
    expect(free.every((s) => s === 200 || s === 503)).toBe(true);
    const body = JSON.parse(shedBody?.text ?? '{}');
    expect(body).toMatchObject({
      type: 'https://iana.org/assignments/http-problem-types#temporary-reduced-capacity',
      status: 503,
      code: 'temporary_reduced_capacity',
    });
    expect(shedBody?.headers['content-type']).toBe('application/problem+json');
    expect(['1', '2']).toContain(shedBody?.headers['retry-after']);
    // The metrics: shed by priority, the limit and what is in flight.
    const metrics = await (await request(`${t.gateway.url}/metrics`, { dispatcher: agent })).body.text();
    const shedFree = Number(/sluice_shed_total\{priority="sheddable"\} (\d+)/.exec(metrics)?.[1]);
    expect(shedFree).toBe(free.filter((s) => s === 503).length);
    expect(metrics).toContain('sluice_shed_total{priority="critical"} 0');
    expect(metrics).toContain(`sluice_overload_limit ${LIMIT}`);
    expect(metrics).toContain('sluice_overload_in_flight 0');
    // At most one warning a second while shedding.
    const warnings = t.logs.lines.filter(
      (l) => l.msg === 'requests shed: the upstream is at its overload limit',
    );
    expect(warnings.length).toBeGreaterThan(0);
    // The lines' times are the wall clock, the pacing runs on the monotonic one: a machine's clock discipline
    // can slew the first against the second by a few milliseconds (997 ms seen between two lines a second apart).
    const times = warnings.map((l) => Date.parse(String(l.time)));
    for (let i = 1; i < times.length; i++) expect(times[i] - times[i - 1]).toBeGreaterThanOrEqual(950);
  });

  it('never sheds the exempt endpoints', async () => {
    const r = await request(`${t.gateway.url}/health`, { dispatcher: agent });
    await r.body.text();
    expect(r.statusCode).toBe(200);
  });
});

describe('an adaptive overload limit at the gateway', () => {
  const { dir, cleanup } = tempDir();
  const agent = new Agent({ connections: 50, keepAliveTimeout: 1000 });
  let upstream: TestUpstream;
  let t: TestGateway;

  beforeAll(async () => {
    upstream = await startUpstream();
    upstream.handler = new LoadedUpstream().handler;
    t = await startGateway(join(dir, 'adaptive.yaml'), {
      yaml: `rateLimiting:
  defaultTier: free
  tiers:
    free: { requestsPerMinute: 600000, burstLimit: 100000 }
overload:
  adaptive: { min: 2, max: 40, initial: 8 }
upstream:
  url: ${upstream.url}
`,
    });
  });
  afterAll(async () => {
    await t.gateway.close();
    await agent.close();
    await upstream.close();
    cleanup();
  });

  it('measures its baseline at min, then serves within min and max, the limit in /metrics', async () => {
    const statuses: number[] = [];
    // Rounds of 4 clients with 40 requests each until 25 were admitted (the baseline's samples at min, while the
    // rest of a burst is shed) and round trips after it: how many a round admits depends on the latency this
    // machine gives the upstream, so the count of rounds is bounded, not fixed.
    for (let round = 0; round < 10 && statuses.filter((s) => s === 200).length < 25; round++) {
      await Promise.all(
        Array.from({ length: 4 }, async () => {
          for (let i = 0; i < 40; i++) {
            const r = await request(`${t.gateway.url}/work`, { dispatcher: agent });
            await r.body.text();
            statuses.push(r.statusCode);
          }
        }),
      );
    }
    expect(statuses.every((s) => s === 200 || s === 503)).toBe(true);
    expect(statuses.filter((s) => s === 200).length).toBeGreaterThanOrEqual(25);
    const metrics = await (await request(`${t.gateway.url}/metrics`, { dispatcher: agent })).body.text();
    const limit = Number(/sluice_overload_limit (\d+)/.exec(metrics)?.[1]);
    expect(limit).toBeGreaterThanOrEqual(2);
    expect(limit).toBeLessThanOrEqual(40);
    expect(metrics).toContain('sluice_overload_in_flight 0');
  });
});
