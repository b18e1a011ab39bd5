import { createServer } from 'node:http';
import { afterEach, describe, expect, it } from 'vitest';
import { fixture, listen } from '../../test/support/adapter-fixtures.js';
import { rateLimitMiddleware, withRateLimit } from './node-adapter.js';

const closers: (() => Promise<void>)[] = [];
afterEach(async () => {
  await Promise.all(closers.splice(0).map((c) => c()));
});

describe('node:http adapter', () => {
  it('works with an asynchronous store', async () => {
    const { http } = fixture('async');
    const s = await listen(createServer(withRateLimit(http, (_req, res) => res.end('hi'))));
    closers.push(s.close);
    const r = await fetch(`${s.url}/api/x`);
    expect(r.status).toBe(200);
    expect(await r.text()).toBe('hi');
    expect(r.headers.get('ratelimit')).toBe('"rl.read";r=2;t=1');
  });

  it('answers the 503 problem when the store fails, and a plain 500 when deciding throws', async () => {
    let called = 0;
    const handler = (_req: unknown, res: { end(): void }) => {
      called++;
      res.end();
    };
    const down = await listen(createServer(withRateLimit(fixture('failing').http, handler)));
    closers.push(down.close);
    const r = await fetch(`${down.url}/api/x`);
    expect(r.status).toBe(503);
    expect(await r.json()).toMatchObject({ code: 'rate_limiter_unavailable' });
    const bad = await listen(createServer(withRateLimit(fixture().http, handler, { cost: () => 0 })));
    closers.push(bad.close);
    const b = await fetch(`${bad.url}/api/x`);
    expect(b.status).toBe(500);
    expect(await b.text()).toBe('Internal Server Error');
    expect(called).toBe(0);
  });

  it('passes store errors to next and decides operation rules once per middleware', async () => {
    const { http } = fixture();
    const global = rateLimitMiddleware(http);
    const write = rateLimitMiddleware(http, { operation: 'rl.write' });
    const s = await listen(
      createServer((req, res) => global(req, res, () => write(req, res, () => res.end('ok')))),
    );
    closers.push(s.close);
    const r = await fetch(`${s.url}/api/items`, { method: 'POST' });
    expect(r.status).toBe(200);
    expect(r.headers.get('ratelimit-policy')).toBe('"rl.read";q=300;w=60, "rl.write";q=120;w=60');
    expect(r.headers.get('ratelimit')).toBe('"rl.read";r=2;t=1, "rl.write";r=1;t=1');
  });

  it('calls next(error) for an invalid cost', async () => {
    const { http } = fixture();
    const mw = rateLimitMiddleware(http, { cost: () => 0 });
    let error: unknown;
    const s = await listen(
      createServer((req, res) =>
        mw(req, res, (e) => {
          error = e;
          res.end();
        }),
      ),
    );
    closers.push(s.close);
    await (await fetch(`${s.url}/api/x`)).text();
    expect((error as { code?: string }).code).toBe('ERR_INVALID_COST');
  });
});
