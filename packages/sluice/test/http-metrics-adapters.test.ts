/**
 * The `metrics` option of createHttpLimiter: an application on an adapter gets the decision, exceeded, exemption
 * and store error series from the sink it passes, over a real Express server.
 */
import { createServer } from 'node:http';
import express from 'express';
import { afterEach, describe, expect, it } from 'vitest';
import { Limiter, ManualClock } from '../src/core/index.js';
import { rateLimit } from '../src/express/express-adapter.js';
import { createHttpLimiter } from '../src/http/index.js';
import { MemoryStore } from '../src/memory/index.js';
import { PrometheusMetrics } from '../src/prometheus/index.js';
import { FailingStore, listen } from './support/adapter-fixtures.js';

const closers: (() => Promise<void>)[] = [];
afterEach(async () => {
  await Promise.all(closers.splice(0).map((c) => c()));
});

async function serve(metrics: PrometheusMetrics, failing = false): Promise<string> {
  const clock = new ManualClock(0);
  const http = createHttpLimiter({
    limiter: new Limiter({
      clock,
      policies: [{ name: 'api', quota: 60, window: 60, burst: 1 }],
      store: failing ? new FailingStore() : new MemoryStore({ clock, sweepIntervalMs: 0 }),
    }),
    rules: [{ name: 'api', path: '/api/*', policies: ['api'], key: 'ip' }],
    metrics,
  });
  const app = express();
  app.use(rateLimit(http));
  app.get('/api/x', (_req, res) => res.send('ok'));
  app.get('/healthz', (_req, res) => res.send('ok'));
  const s = await listen(createServer(app));
  closers.push(s.close);
  return s.url;
}

const series = async (m: PrometheusMetrics, name: string): Promise<string[]> =>
  (await m.registry.metrics()).split('\n').filter((l) => l.startsWith(`${name}{`));

describe('createHttpLimiter metrics', () => {
  it('records every decision of an Express app, its denials and its exemptions', async () => {
    const metrics = new PrometheusMetrics();
    const url = await serve(metrics);
    const statuses: number[] = [];
    for (let i = 0; i < 3; i++) statuses.push((await fetch(`${url}/api/x`)).status);
    expect(statuses).toEqual([200, 429, 429]);
    expect((await fetch(`${url}/healthz`)).status).toBe(200);
    const exceeded = await series(metrics, 'sluice_rate_limit_exceeded_total');
    expect(exceeded).toHaveLength(1);
    expect(exceeded[0]).toContain('policy="api"');
    expect(exceeded[0]).toMatch(/ 2$/);
    expect(await series(metrics, 'sluice_decisions_total')).toEqual(
      expect.arrayContaining([
        'sluice_decisions_total{policy="api",tier="",rule="api",outcome="allowed"} 1',
        'sluice_decisions_total{policy="api",tier="",rule="api",outcome="limited"} 2',
      ]),
    );
    expect(await series(metrics, 'sluice_exempt_total')).toHaveLength(1);
  });

  it('records a store that could not answer', async () => {
    const metrics = new PrometheusMetrics();
    const url = await serve(metrics, true);
    expect((await fetch(`${url}/api/x`)).status).toBe(503);
    const errors = await series(metrics, 'sluice_store_errors_total');
    expect(errors).toHaveLength(1);
    expect(errors[0]).toMatch(/ 1$/);
  });

  it('refuses a metrics option that is no sink, naming the option, the expectation and the value', () => {
    const limiter = new Limiter({
      policies: [{ name: 'api', quota: 60, window: 60 }],
      store: new MemoryStore(),
    });
    const make = (metrics: unknown) =>
      createHttpLimiter({ limiter, rules: [{ path: '/*', policies: ['api'] }], metrics: metrics as never });
    expect(() => make({})).toThrow(
      /^metrics must be a LimiterMetrics sink with recordDecision \(sluice\/prometheus, sluice\/otel\), got/,
    );
    expect(() => make({ recordDecision: () => {}, recordExempt: 1 })).toThrow(
      /metrics\.recordExempt must be a function/,
    );
    try {
      make(5);
    } catch (e) {
      expect(e).toMatchObject({ code: 'ERR_INVALID_OPTION', details: { option: 'metrics' } });
    }
  });

  it('has an adapter refuse the option with a hint to give it to createHttpLimiter, so nothing counts twice', () => {
    const limiter = new Limiter({
      policies: [{ name: 'api', quota: 60, window: 60 }],
      store: new MemoryStore(),
    });
    const http = createHttpLimiter({ limiter, rules: [{ path: '/*', policies: ['api'] }] });
    expect(() => rateLimit(http, { metrics: new PrometheusMetrics() } as never)).toThrow(
      /createHttpLimiter\(\{ limiter, rules, metrics \}\)/,
    );
  });
});
