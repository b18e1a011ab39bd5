import { Agent, createServer, request } from 'node:http';
import { afterEach, describe, expect, it } from 'vitest';
import { chargedByFirstAnswer, fixture, listen, tokenLimiter } from '../../test/support/adapter-fixtures.js';
import { rateLimitMiddleware, withRateLimit } from './node-adapter.js';

const usage = JSON.stringify({ usage: { total_tokens: 4000 } });
const node = (h: Parameters<typeof withRateLimit>[1]) => createServer(withRateLimit(tokenLimiter(), h));

const closers: (() => Promise<void>)[] = [];
afterEach(async () => {
  await Promise.all(closers.splice(0).map((c) => c()));
});

/** One request on `agent`, answered with its status, raw header lines in order, and body. */
function exchange(
  url: string,
  agent: Agent,
  method: string,
  headers: Record<string, string>,
): Promise<{ status: number; lines: string[]; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request(`${url}/api/x`, { method, headers, agent }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => {
        body += c;
      });
      res.on('end', () => resolve({ status: res.statusCode ?? 0, lines: res.rawHeaders, body }));
    });
    req.on('error', reject);
    // The declared upload is never sent: the denial must close rather than wait for it.
    req.end();
  });
}

describe('node:http adapter', () => {
  it('writes every denial its own header lines: Connection: close only where an upload is left unread', async () => {
    const { http } = fixture();
    const s = await listen(createServer(withRateLimit(http, (_req, res) => res.end('ok'))));
    closers.push(s.close);
    const agent = new Agent({ keepAlive: true });
    closers.push(async () => agent.destroy());
    for (let i = 0; i < 3; i++) expect((await exchange(s.url, agent, 'GET', {})).status).toBe(200);
    // The lines up to Content-Length (legacy fields included in the fixture's mode), as the first denial wrote them.
    let names: string[] | undefined;
    // Alternate: the list one denial wrote must not leak into the next, longer or shorter.
    for (const upload of [false, true, false, true, false]) {
      const r = await exchange(s.url, agent, 'POST', upload ? { 'content-length': String(1 << 20) } : {});
      expect(r.status).toBe(429);
      const got = r.lines.filter((_, i) => i % 2 === 0);
      names ??= got.slice(0, got.indexOf('Content-Length') + 1);
      expect(names.slice(-4)).toEqual([
        'Cache-Control',
        'X-Content-Type-Options',
        'X-Request-Id',
        'Content-Length',
      ]);
      expect(got.slice(0, names.length)).toEqual(names);
      expect(r.lines[2 * names.indexOf('Content-Length') + 1]).toBe(String(Buffer.byteLength(r.body)));
      expect(JSON.parse(r.body).correlation_id).toBe(r.lines[2 * names.indexOf('X-Request-Id') + 1]);
      const connection = r.lines[r.lines.indexOf('Connection') + 1];
      expect(connection).toBe(upload ? 'close' : 'keep-alive');
    }
  });

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

  it('settles the JSON usage of an answer whose head goes out implicitly, by end, write or flushHeaders', async () => {
    expect(
      await chargedByFirstAnswer(node, (res) => {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(usage);
      }),
    ).toBe(4000);
    expect(
      await chargedByFirstAnswer(node, (res) => {
        res.setHeader('content-type', 'application/json');
        res.end(usage);
      }),
    ).toBe(4000);
    expect(
      await chargedByFirstAnswer(node, (res) => {
        res.setHeader('content-type', 'application/json');
        res.write(usage.slice(0, 10));
        res.write(Buffer.from(usage.slice(10)));
        res.end();
      }),
    ).toBe(4000);
    expect(
      await chargedByFirstAnswer(node, (res) => {
        res.setHeader('content-type', 'application/json');
        res.flushHeaders();
        res.end(usage);
      }),
    ).toBe(4000);
  });
});
