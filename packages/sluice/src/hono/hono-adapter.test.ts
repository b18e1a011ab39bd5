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

  it('keys requests without a known peer as ip:unknown and reports store failures to onError', async () => {
    const { http } = fixture('failing');
    const app = new Hono();
    app.use('*', rateLimit(http));
    app.get('/api/x', (c) => c.text('never'));
    app.onError((err, c) => c.json({ code: (err as { code?: string }).code }, 503));
    const r = await app.request('/api/x');
    expect(r.status).toBe(503);
    expect(await r.json()).toEqual({ code: 'ERR_STORE_UNAVAILABLE' });
  });
});
