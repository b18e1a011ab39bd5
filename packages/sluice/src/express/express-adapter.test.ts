import { createServer } from 'node:http';
import express from 'express';
import { afterEach, describe, expect, it } from 'vitest';
import { chargedByFirstAnswer, fixture, listen, tokenLimiter } from '../../test/support/adapter-fixtures.js';
import { rateLimit } from './express-adapter.js';

const closers: (() => Promise<void>)[] = [];
afterEach(async () => {
  await Promise.all(closers.splice(0).map((c) => c()));
});

/**
 * Three POSTs to a server whose global middleware decides the path rule (`rl.read`, burst 3) and whose route
 * middleware decides the operation rule (`rl.write`, burst 2): the third is denied, and each answer carries one
 * `RateLimit` item per rule, so neither rule was charged twice.
 */
async function expectEachRuleOnce(server: import('node:http').Server): Promise<void> {
  const s = await listen(server);
  closers.push(s.close);
  const post = () => fetch(`${s.url}/api/items`, { method: 'POST' });
  const first = await post();
  expect(first.status).toBe(201);
  expect(first.headers.get('ratelimit')).toBe('"rl.read";r=2;t=1, "rl.write";r=1;t=1');
  expect((await post()).status).toBe(201);
  const third = await post();
  expect(third.status).toBe(429);
  expect(third.headers.get('ratelimit')).toBe('"rl.read";r=0;t=1, "rl.write";r=0;t=1');
}

describe('Express adapter', () => {
  it('decides path rules globally and operation rules on the route, each once', async () => {
    const { http } = fixture();
    const app = express();
    app.use(rateLimit(http));
    let calls = 0;
    app.post('/api/items', rateLimit(http, { operation: 'rl.write' }), (_req, res) => {
      calls++;
      res.status(201).end();
    });
    await expectEachRuleOnce(createServer(app));
    expect(calls).toBe(2);
  });

  it('decides each rule once also without Express, where a response has no locals (connect-style chains)', async () => {
    const { http } = fixture();
    const global = rateLimit(http);
    const route = rateLimit(http, { operation: 'rl.write' });
    let calls = 0;
    // An error handed to `next` answers 500, so a middleware that failed cannot pass for one that admitted.
    const failed = (res: import('node:http').ServerResponse, error: unknown) => {
      if (error === undefined) return false;
      res.statusCode = 500;
      res.end(String(error));
      return true;
    };
    // What connect and polka do: set `originalUrl`, then call each middleware with the next one as `next`.
    const server = createServer((req, res) => {
      const r = Object.assign(req, { originalUrl: req.url }) as unknown as express.Request;
      const w = res as unknown as express.Response;
      global(r, w, (e?: unknown) => {
        if (failed(res, e)) return;
        route(r, w, (e2?: unknown) => {
          if (failed(res, e2)) return;
          calls++;
          res.statusCode = 201;
          res.end();
        });
      });
    });
    await expectEachRuleOnce(server);
    expect(calls).toBe(2);
  });

  it('answers the 503 problem when the store fails, and passes thrown errors to the error handler', async () => {
    const { http } = fixture('failing');
    const app = express();
    const errors: (string | undefined)[] = [];
    app.use(rateLimit(http));
    app.get('/api/x', (_req, res) => res.end('never'));
    app.use(
      (err: { code?: string }, _req: express.Request, res: express.Response, _next: express.NextFunction) => {
        errors.push(err.code);
        res.status(500).json({ code: err.code });
      },
    );
    const s = await listen(createServer(app));
    closers.push(s.close);
    const r = await fetch(`${s.url}/api/x`);
    expect(r.status).toBe(503);
    expect(await r.json()).toMatchObject({ status: 503, code: 'rate_limiter_unavailable' });
    expect(errors).toEqual([]);
    const app2 = express();
    app2.use(rateLimit(fixture().http, { cost: () => 0 }));
    app2.use(
      (err: { code?: string }, _req: express.Request, res: express.Response, _next: express.NextFunction) => {
        res.status(500).json({ code: err.code });
      },
    );
    const s2 = await listen(createServer(app2));
    closers.push(s2.close);
    expect(await (await fetch(`${s2.url}/api/x`)).json()).toEqual({ code: 'ERR_INVALID_COST' });
  });

  it('works with an asynchronous store', async () => {
    const { http } = fixture('async');
    const app = express();
    app.use(rateLimit(http));
    app.get('/api/x', (_req, res) => res.end('ok'));
    const s = await listen(createServer(app));
    closers.push(s.close);
    expect((await fetch(`${s.url}/api/x`)).headers.get('ratelimit')).toBe('"rl.read";r=2;t=1');
  });

  it('settles the JSON usage of res.json and res.send, whose head goes out implicitly', async () => {
    const usage = { usage: { total_tokens: 4000 } };
    const app =
      (send: (res: import('express').Response) => void) => (h: (req: never, res: never) => void) => {
        const a = express();
        a.use(rateLimit(tokenLimiter()));
        a.all('/v1/x', (req, res) => {
          h(req as never, res as never);
          send(res);
        });
        return createServer(a);
      };
    expect(
      await chargedByFirstAnswer(
        app((res) => res.json(usage)),
        () => {},
      ),
    ).toBe(4000);
    expect(
      await chargedByFirstAnswer(
        app((res) => res.type('json').send(JSON.stringify(usage))),
        () => {},
      ),
    ).toBe(4000);
  });
});
