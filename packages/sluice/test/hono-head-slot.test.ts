import { Hono } from 'hono';
import { describe, expect, it } from 'vitest';
import { Limiter, ManualClock } from '../src/core/index.js';
import { rateLimit } from '../src/hono/index.js';
import { createHttpLimiter, inFlightRequests } from '../src/http/index.js';
import { MemoryStore } from '../src/memory/index.js';

const remoteAddress = () => '192.0.2.1';

function app() {
  const clock = new ManualClock(0);
  const limiter = new Limiter({
    policies: [{ name: 'reports', concurrent: 2, retryAfter: 1 }],
    store: new MemoryStore({ clock, sweepIntervalMs: 0 }),
  });
  const http = createHttpLimiter({
    limiter,
    rules: [{ path: '/api/reports/*', policies: ['reports'], settle: { bytes: 'response' } }],
  });
  const a = new Hono();
  a.use('*', rateLimit(http, { remoteAddress }));
  a.get('/api/reports/*', (c) => c.text('a report body'));
  return { a, reports: limiter.policy('reports') };
}

describe('Hono adapter, HEAD requests', () => {
  it('gives a HEAD request its slot back: Hono answers HEAD with the GET route and drops the body unread', async () => {
    const { a, reports } = app();
    for (let i = 0; i < 3; i++) {
      const r = await a.request('/api/reports/q', { method: 'HEAD' });
      // A third HEAD would be refused if the first two still held their slots.
      expect(r.status).toBe(200);
      expect(await r.text()).toBe('');
    }
    expect(inFlightRequests(reports)).toBe(0);
    const get = await a.request('/api/reports/q');
    expect(await get.text()).toBe('a report body');
    expect(inFlightRequests(reports)).toBe(0);
  });
});
