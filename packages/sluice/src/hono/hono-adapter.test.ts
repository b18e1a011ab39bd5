import { Hono } from 'hono';
import { describe, expect, it } from 'vitest';
import { fixture } from '../../test/support/adapter-fixtures.js';
import { rateLimit } from './hono-adapter.js';

const remoteAddress = () => '192.0.2.1';

describe('Hono adapter', () => {
  it('decides path rules globally and operation rules on the route, each once', async () => {
    const { http } = fixture();
    const app = new Hono();
    app.use('*', rateLimit(http, { remoteAddress }));
    app.post('/api/items', rateLimit(http, { remoteAddress, operation: 'rl.write' }), (c) =>
      c.text('ok', 201),
    );
    const r = await app.request('/api/items', { method: 'POST' });
    expect(r.status).toBe(201);
    expect(r.headers.get('ratelimit-policy')).toBe('"rl.read";q=300;w=60, "rl.write";q=120;w=60');
    expect(r.headers.get('ratelimit')).toBe('"rl.read";r=2;t=1, "rl.write";r=1;t=1');
  });

  it('sets headers on responses with immutable headers and on errors', async () => {
    const { http } = fixture('async');
    const app = new Hono();
    app.use('*', rateLimit(http, { remoteAddress }));
    app.get('/api/frozen', () => Response.redirect('http://127.0.0.1/elsewhere', 302));
    app.get('/api/boom', () => {
      throw new Error('boom');
    });
    const frozen = await app.request('/api/frozen');
    expect(frozen.status).toBe(302);
    expect(frozen.headers.get('ratelimit')).toBe('"rl.read";r=2;t=1');
    const boom = await app.request('/api/boom');
    expect(boom.status).toBe(500);
    expect(boom.headers.get('ratelimit')).toBe('"rl.read";r=1;t=1');
  });

  it('keys requests without a known peer as ip:unknown, answers 503 when the store fails, and throws to onError', async () => {
    const warnings: string[] = [];
    const warn = (_message: string, code: string) => void warnings.push(code);
    const app = (limiter: ReturnType<typeof fixture>['http'], cost?: () => number) => {
      const a = new Hono();
      a.use('*', rateLimit(limiter, { warn, cost }));
      a.get('*', (c) => c.text('never'));
      a.onError((err, c) => c.json({ code: (err as { code?: string }).code }, 500));
      return a;
    };
    const r = await app(fixture('failing').http).request('/api/x');
    expect(r.status).toBe(503);
    expect(await r.json()).toMatchObject({ code: 'rate_limiter_unavailable' });
    const costly = await app(fixture().http, () => 0).request('/api/x');
    expect(costly.status).toBe(500);
    expect(await costly.json()).toEqual({ code: 'ERR_INVALID_COST' });
    expect(warnings).toEqual(['SLUICE_W_NO_PEER_ADDRESS', 'SLUICE_W_NO_PEER_ADDRESS']); // one per limiter
  });
});
