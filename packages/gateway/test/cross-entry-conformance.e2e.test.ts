/**
 * One configuration, the same bytes everywhere: the example file's tiers and endpoint rules decided through
 * node:http, Express, Fastify and Hono (each with `sluice/http` configured by hand as an application would), the
 * gateway's proxy and its decision API. The same requests go to every entry; status, rate-limit headers, problem
 * headers and problem body must be identical.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Limiter, ManualClock, type PolicyOptions } from 'sluice';
import { createHttpLimiter } from 'sluice/http';
import { MemoryStore } from 'sluice/memory';
import type { Agent } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADAPTERS, type RunningApp, startApp } from '../../sluice/test/support/adapter-apps.js';
import {
  client,
  decisionEndpoint,
  send,
  startGateway,
  startUpstream,
  type TestGateway,
  type TestUpstream,
  tempDir,
  WALL_MS,
} from './support.js';

const EXAMPLE = readFileSync(new URL('../examples/rate-limits.yaml', import.meta.url), 'utf8');

/** The example file in the library's words: the default tier's buckets and every endpoint rule, keyed by caller. */
const POLICIES: PolicyOptions[] = [
  { name: 'standard', quota: 300, window: 60, burst: 50 },
  { name: 'standard.hour', quota: 10_000, window: 3600, burst: 10_000 },
  { name: '/api/risk/simulation/*', quota: 30, window: 60 },
  { name: '/api/risk/simulation/studio/*', quota: 10, window: 60 },
  { name: '/system/airgap/seal', quota: 5, window: 3600 },
];

const OWNED = [
  'ratelimit-policy',
  'ratelimit',
  'x-ratelimit-limit',
  'x-ratelimit-remaining',
  'x-ratelimit-reset',
  'x-ratelimit-policy',
  'retry-after',
];
const OWNED_ON_DENIAL = ['content-type', 'cache-control', 'x-content-type-options', 'x-request-id'];

interface Entry {
  readonly name: string;
  readonly ask: (method: string, path: string, headers: Record<string, string>) => Promise<Result>;
  readonly advance: (ms: number) => void;
}
interface Result {
  /** The status of a denial; `passed` for whatever the handler or upstream answered (routes differ per entry). */
  status: number | 'passed';
  headers: Record<string, string>;
  problem?: unknown;
}

const { dir, cleanup } = tempDir();
const apps: RunningApp[] = [];
let gateway: TestGateway;
let upstream: TestUpstream;
let agent: Agent;
const entries: Entry[] = [];

function pick(headers: Record<string, string | string[] | undefined>, status: number): Result['headers'] {
  const out: Record<string, string> = {};
  const names = status >= 400 ? [...OWNED, ...OWNED_ON_DENIAL] : OWNED;
  for (const n of names) {
    const v = headers[n];
    if (v !== undefined) out[n] = Array.isArray(v) ? v.join(', ') : v;
  }
  return out;
}

beforeAll(async () => {
  agent = client();
  upstream = await startUpstream();
  gateway = await startGateway(join(dir, 'rate-limits.yaml'), {
    yaml: `${EXAMPLE}\nupstream:\n  url: ${upstream.url}\ndecision:\n  port: 0\n`,
  });
  const viaUrl = async (url: string, method: string, headers: Record<string, string>): Promise<Result> => {
    const r = await send(agent, url, { method, headers });
    const denied = String(r.headers['content-type']).startsWith('application/problem+json');
    const res: Result = {
      status: denied ? r.status : 'passed',
      headers: pick(r.headers, denied ? r.status : 200),
    };
    if (denied) res.problem = r.json();
    return res;
  };
  entries.push({
    name: 'gateway',
    ask: (method, path, headers) => viaUrl(gateway.gateway.url + path, method, headers),
    advance: (ms) => gateway.clock.advance(ms),
  });
  const decide = decisionEndpoint(gateway.gateway);
  entries.push({
    name: 'decision API',
    ask: async (method, path, headers) => {
      const r = await viaUrl(decide, 'GET', {
        ...headers,
        'x-original-uri': path,
        'x-original-method': method,
        'x-real-ip': '127.0.0.1',
      });
      return r;
    },
    // The decision API is the same gateway: its clock moved with the proxy's entry.
    advance: () => {},
  });
  for (const adapter of ADAPTERS) {
    const clock = new ManualClock(0);
    const limiter = new Limiter({
      policies: POLICIES,
      store: new MemoryStore({ clock, sweepIntervalMs: 0 }),
    });
    const http = createHttpLimiter({
      limiter,
      rules: [
        { name: 'tier:standard', policies: ['standard', 'standard.hour'], key: 'caller' },
        ...POLICIES.slice(2).map((p) => ({
          name: p.name,
          path: p.name,
          policies: [p.name],
          key: 'caller' as const,
        })),
      ],
      wallClock: () => WALL_MS,
    });
    const app = await startApp(adapter, http);
    apps.push(app);
    entries.push({
      name: adapter,
      ask: (m, p, h) => viaUrl(app.url + p, m, h),
      advance: (ms) => clock.advance(ms),
    });
  }
});

afterAll(async () => {
  await Promise.all(apps.map((a) => a.close()));
  await gateway.gateway.close();
  await upstream.close();
  await agent.close();
  cleanup();
});

describe('every entry answers alike (node, express, fastify, hono, gateway, decision API)', () => {
  it('sends the same headers, the same 429 problem and the same 400 for a refused target', async () => {
    // The gateway and its decision API share one bucket table, so each request goes to them on alternate calls
    // and twice to each adapter: every entry then sees the same sequence of counts.
    const seq = async (method: string, path: string) => {
      const gw = await entries[0].ask(method, path, { 'x-request-id': 'cross-entry' });
      const dec = await entries[1].ask(method, path, { 'x-request-id': 'cross-entry' });
      const libs: Result[][] = [];
      for (const e of entries.slice(2)) {
        libs.push([
          await e.ask(method, path, { 'x-request-id': 'cross-entry' }),
          await e.ask(method, path, { 'x-request-id': 'cross-entry' }),
        ]);
      }
      for (const [i, pair] of libs.entries()) {
        expect({ entry: entries[i + 2].name, ...pair[0] }).toEqual({ entry: entries[i + 2].name, ...gw });
        expect({ entry: entries[i + 2].name, ...pair[1] }).toEqual({ entry: entries[i + 2].name, ...dec });
      }
      return [gw, dec];
    };
    const [first] = await seq('POST', '/api/risk/simulation/studio/run');
    expect(first.status).toBe('passed');
    expect(first.headers['ratelimit-policy']).toBe(
      '"standard";q=300;w=60, "standard.hour";q=10000;w=3600, "/api/risk/simulation/*";q=30;w=60, "/api/risk/simulation/studio/*";q=10;w=60',
    );
    for (let i = 0; i < 4; i++) await seq('POST', '/api/risk/simulation/studio/run');
    const [denied] = await seq('POST', '/api/risk/simulation/studio/run');
    expect(denied.status).toBe(429);
    expect(denied.headers['retry-after']).toBe('6');
    expect(denied.headers['x-content-type-options']).toBe('nosniff');
    expect(denied.problem).toMatchObject({ code: 'rate_limited', correlation_id: 'cross-entry' });
    const [refused] = await seq('POST', '/system/airgap%2Fseal');
    expect(refused.status).toBe(400);
    expect(refused.problem).toMatchObject({ status: 400, code: 'bad_request_target' });
    const [exempt] = await seq('GET', '/health');
    expect(exempt.headers).toEqual({});
  });
});
