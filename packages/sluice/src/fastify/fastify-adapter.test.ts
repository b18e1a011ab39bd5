import Fastify from 'fastify';
import { afterEach, describe, expect, it } from 'vitest';
import { fixture } from '../../test/support/adapter-fixtures.js';
import { routeSettings, sluiceFastify } from './fastify-adapter.js';

const apps: { close(): Promise<unknown> }[] = [];
afterEach(async () => {
  await Promise.all(apps.splice(0).map((a) => a.close()));
});

describe('Fastify adapter', () => {
  it('takes operation and cost from per-route config and exempts routes with rateLimit: false', async () => {
    const { http } = fixture();
    const app = Fastify();
    apps.push(app);
    await app.register(sluiceFastify, { limiter: http });
    app.post('/api/items', { config: { rateLimit: { operation: 'rl.write', cost: 2 } } }, async () => 'ok');
    app.get('/api/free', { config: { rateLimit: false } }, async () => 'ok');
    const post = await app.inject({ method: 'POST', url: '/api/items' });
    expect(post.statusCode).toBe(200);
    expect(post.headers.ratelimit).toBe('"rl.read";r=1;t=1, "rl.write";r=0;t=1');
    const free = await app.inject({ method: 'GET', url: '/api/free' });
    expect(free.statusCode).toBe(200);
    expect(free.headers.ratelimit).toBeUndefined();
  });

  it('works with an asynchronous store, answers 503 when the store fails, and 500 when deciding throws', async () => {
    const ok = Fastify();
    apps.push(ok);
    await ok.register(sluiceFastify, { limiter: fixture('async').http });
    ok.get('/api/x', async () => 'ok');
    expect((await ok.inject({ url: '/api/x' })).headers.ratelimit).toBe('"rl.read";r=2;t=1');
    const down = Fastify();
    apps.push(down);
    await down.register(sluiceFastify, { limiter: fixture('failing').http });
    down.get('/api/x', async () => 'never');
    const r = await down.inject({ url: '/api/x' });
    expect(r.statusCode).toBe(503);
    expect(r.json()).toMatchObject({ code: 'rate_limiter_unavailable' });
  });

  it('decides in another hook when asked, and rejects bad options', async () => {
    const app = Fastify();
    apps.push(app);
    await app.register(sluiceFastify, { limiter: fixture().http, hook: 'preHandler' });
    app.get('/api/x', async () => 'ok');
    expect((await app.inject({ url: '/api/x' })).headers.ratelimit).toBe('"rl.read";r=2;t=1');
    const bad = Fastify();
    apps.push(bad);
    await expect(bad.register(sluiceFastify, { limiter: {} as never })).rejects.toThrow(/HttpLimiter/);
    const badHook = Fastify();
    apps.push(badHook);
    await expect(
      badHook.register(sluiceFastify, { limiter: fixture().http, hook: 'onSend' as never }),
    ).rejects.toThrow(/options\.hook/);
  });
});

describe('Fastify route settings checked at registration', () => {
  it('refuses a route whose config.rateLimit is invalid, naming the route and the option', async () => {
    const app = Fastify();
    apps.push(app);
    await app.register(sluiceFastify, { limiter: fixture().http });
    const bad: [unknown, string][] = [
      [{ cost: -1 }, 'config.rateLimit.cost'],
      [{ cost: 1.5 }, 'config.rateLimit.cost'],
      [{ cost: '2' }, 'config.rateLimit.cost'],
      [{ operation: 7 }, 'config.rateLimit.operation'],
      [{ max: 5 }, 'config.rateLimit.max'],
      [true, 'config.rateLimit'],
    ];
    for (const [rateLimit, option] of bad) {
      let error: unknown;
      try {
        app.get('/api/x', { config: { rateLimit: rateLimit as false } }, async () => 'ok');
      } catch (e) {
        error = e;
      }
      expect(error).toMatchObject({ code: 'ERR_INVALID_OPTION' });
      expect((error as Error).message).toContain(`sluice/fastify route GET /api/x ${option} must be`);
    }
    app.get('/api/ok', { config: { rateLimit: { operation: 'rl.write', cost: 2 } } }, async () => 'ok');
    app.get('/api/free', { config: { rateLimit: false } }, async () => 'ok');
    expect((await app.inject({ url: '/api/ok' })).statusCode).toBe(200);
  });
});

describe('Fastify route settings of routes registered before the plugin', () => {
  it('answers 500 naming the route and the option, without deciding, for an invalid config.rateLimit', async () => {
    const { http } = fixture();
    const app = Fastify();
    apps.push(app);
    // onRoute never sees these routes: their settings are checked on their first request instead.
    const bad: [string, unknown, string][] = [
      ['/api/a', { cost: 0 }, 'config.rateLimit.cost'],
      ['/api/b', { cost: 1.5 }, 'config.rateLimit.cost'],
      ['/api/c', { operation: 7 }, 'config.rateLimit.operation'],
      // Another library's setting would otherwise be dropped without a word, the route limited by the defaults.
      ['/api/d', { max: 5 }, 'config.rateLimit.max'],
      ['/api/e', true, 'config.rateLimit'],
    ];
    for (const [url, rateLimit] of bad)
      app.get(url, { config: { rateLimit: rateLimit as false } }, async () => 'ok');
    app.get('/api/ok', async () => 'ok');
    await app.register(sluiceFastify, { limiter: http });
    for (const [url, , option] of bad) {
      for (let i = 0; i < 2; i++) {
        const r = await app.inject({ url });
        expect(r.statusCode, url).toBe(500);
        expect(r.json()).toMatchObject({ code: 'ERR_INVALID_OPTION' });
        expect(r.json().message).toContain(`sluice/fastify route GET ${url} ${option} must be`);
      }
    }
    // None of them was decided: the caller's bucket is full (burst 3) for the first request that is.
    expect((await app.inject({ url: '/api/ok' })).headers.ratelimit).toBe('"rl.read";r=2;t=1');
  });

  it('checks a valid setting once per route, on its first request', async () => {
    const app = Fastify();
    apps.push(app);
    let listed = 0;
    // A setting that counts how often its keys are listed: the check lists them, deciding reads two fields.
    const rateLimit = new Proxy(
      { operation: 'rl.write', cost: 1 },
      {
        ownKeys: (target) => {
          listed++;
          return Reflect.ownKeys(target);
        },
      },
    );
    app.post('/api/early', { config: { rateLimit } }, async () => 'ok');
    await app.register(sluiceFastify, { limiter: fixture().http });
    for (let i = 0; i < 3; i++) await app.inject({ method: 'POST', url: '/api/early' });
    expect(listed).toBe(1);
  });
});

describe('Fastify adapter coverage', () => {
  it('limits requests that match no route, and keeps route hooks of the application', async () => {
    const app = Fastify();
    apps.push(app);
    await app.register(sluiceFastify, { limiter: fixture().http });
    let own = 0;
    const count = (_req: unknown, _reply: unknown, done: () => void) => {
      own++;
      done();
    };
    app.get('/api/own', { onRequest: [count] }, async () => 'ok');
    app.get('/api/single', { onRequest: count }, async () => 'ok');
    expect((await app.inject({ url: '/api/nowhere' })).headers.ratelimit).toBe('"rl.read";r=2;t=1');
    expect((await app.inject({ url: '/api/own' })).headers.ratelimit).toBe('"rl.read";r=1;t=1');
    expect((await app.inject({ url: '/api/single' })).headers.ratelimit).toBe('"rl.read";r=0;t=1');
    expect(own).toBe(2);
    expect((await app.inject({ url: '/api/own' })).statusCode).toBe(429);
    expect(own).toBe(2); // the limiter runs first and answers before the route's own hooks
  });

  it('limits routes registered before the plugin too, with their per-route settings', async () => {
    const app = Fastify();
    apps.push(app);
    // The order of a typical app that registers plugins after its routes: nothing may pass unlimited.
    app.get('/api/early', async () => 'ok');
    app.post('/api/early', { config: { rateLimit: { operation: 'rl.write', cost: 2 } } }, async () => 'ok');
    app.get('/api/early-free', { config: { rateLimit: false } }, async () => 'ok');
    await app.register(sluiceFastify, { limiter: fixture().http });
    expect((await app.inject({ url: '/api/early' })).headers.ratelimit).toBe('"rl.read";r=2;t=1');
    const post = await app.inject({ method: 'POST', url: '/api/early' });
    // The route's cost of 2 is taken from every bucket the request is charged to.
    expect(post.headers.ratelimit).toBe('"rl.read";r=0;t=1, "rl.write";r=0;t=1');
    expect((await app.inject({ url: '/api/early' })).statusCode).toBe(429);
    const free = await app.inject({ url: '/api/early-free' });
    expect(free.statusCode).toBe(200);
    expect(free.headers.ratelimit).toBeUndefined();
  });
});

describe('Fastify route settings', () => {
  const read = (config: unknown, own: Record<symbol, unknown> = {}) =>
    Object.assign(Object.create(null), own, { routeOptions: { config } }) as never;

  it('reads config.rateLimit through the route context once its key is known, and through routeOptions without it', () => {
    const key = Symbol('fastify.context');
    const costly = { rateLimit: { cost: 2 } };
    const free = { rateLimit: false };
    const settings = routeSettings();
    expect(settings(read(costly, { [key]: { config: costly } }))).toEqual({ cost: 2 });
    // Later requests are read through the key: their context is the one that counts.
    expect(settings(read({}, { [key]: { config: free } }))).toBe(false);
    // A request without the context is read as before.
    expect(settings(read(costly))).toEqual({ cost: 2 });
  });

  it('keeps to routeOptions when no symbol of the request leads to its config', () => {
    const settings = routeSettings();
    const other = Symbol('other');
    expect(settings(read({ rateLimit: false }, { [other]: { config: {} } }))).toBe(false);
    expect(
      settings(read({ rateLimit: { operation: 'rl.write' } }, { [other]: { config: { rateLimit: false } } })),
    ).toEqual({ operation: 'rl.write' });
    expect(routeSettings()(read(undefined))).toBeUndefined();
  });
});
