/**
 * Adapters check their options when mounted. Another library's options (express-rate-limit's
 * `{ windowMs, limit }`) used to mount without complaint and then answer 500 to every request; now every adapter
 * throws SluiceError ERR_INVALID_OPTION at mount time, naming the option, with a hint where the option is a
 * well-known foreign one. No adapter throws anything but a SluiceError.
 */
import Fastify from 'fastify';
import { afterEach, describe, expect, it } from 'vitest';
import { ErrorCode, SluiceError } from '../src/core/index.js';
import { rateLimit as expressRateLimit } from '../src/express/index.js';
import { sluiceFastify } from '../src/fastify/index.js';
import { rateLimit as honoRateLimit } from '../src/hono/index.js';
import { rateLimitMiddleware, withRateLimit } from '../src/node/index.js';
import { fixture } from './support/adapter-fixtures.js';

type Mount = (limiter: unknown, options?: Record<string, unknown>) => Promise<unknown>;

const apps: { close(): Promise<unknown> }[] = [];
afterEach(async () => {
  await Promise.all(apps.splice(0).map((a) => a.close()));
});

const MOUNTS: Record<string, Mount> = {
  'node rateLimitMiddleware': async (l, o) => rateLimitMiddleware(l as never, o as never),
  'node withRateLimit': async (l, o) => withRateLimit(l as never, () => {}, o as never),
  express: async (l, o) => expressRateLimit(l as never, o as never),
  hono: async (l, o) => honoRateLimit(l as never, o as never),
  // The plugin takes the limiter among its options, so a foreign options object stands in the options; any other
  // limiter (an HttpLimiter, or the engine's Limiter given by mistake) goes in `limiter`.
  fastify: async (l, o) => {
    const app = Fastify();
    apps.push(app);
    const http = typeof (l as { evaluate?: unknown })?.evaluate === 'function';
    const plain = l === undefined || Object.getPrototypeOf(l) === Object.prototype;
    const options = http || !plain ? { limiter: l, ...o } : { ...(l as object) };
    return app.register(sluiceFastify, options as never);
  },
};

async function failure(mount: PromiseLike<unknown>): Promise<SluiceError> {
  try {
    await mount;
  } catch (e) {
    return e as SluiceError;
  }
  throw new Error('mounted without an error');
}

describe.each(Object.keys(MOUNTS))('%s: options checked at mount time', (name) => {
  const mount = MOUNTS[name];

  it("names express-rate-limit's options given in place of the limiter, with a hint", async () => {
    const e = await failure(mount({ windowMs: 60_000, limit: 100 }));
    expect(e).toBeInstanceOf(SluiceError);
    expect(e.code).toBe(ErrorCode.InvalidOption);
    expect(e.message).toMatch(/windowMs/);
    expect(e.message).toMatch(/HttpLimiter from createHttpLimiter/);
    expect(String(e.details.option)).toMatch(/\.windowMs$/);
  });

  it('names a foreign option among the options, with a hint', async () => {
    const e = await failure(mount(fixture().http, { max: 5 }));
    expect(e).toBeInstanceOf(SluiceError);
    expect(e.code).toBe(ErrorCode.InvalidOption);
    expect(e.message).toMatch(/options\.max must be one of the known options/);
    expect(e.message).toMatch(/createHttpLimiter/);
  });

  it('names an unknown option and lists the known ones', async () => {
    const e = await failure(mount(fixture().http, { identfy: () => undefined }));
    expect(e).toMatchObject({ code: ErrorCode.InvalidOption, details: { given: '"identfy"' } });
    expect(e.message).toMatch(/options\.identfy must be one of the known options \(.*identify.*warn.*\)/);
  });

  it('rejects an option of the wrong kind, and a missing limiter', async () => {
    const bad = await failure(mount(fixture().http, { identify: 'user', warn: 1 }));
    expect(bad).toMatchObject({ code: ErrorCode.InvalidOption });
    expect(bad.message).toMatch(/options\.identify must be a function, got "user"/);
    const missing = await failure(mount(undefined));
    expect(missing).toBeInstanceOf(SluiceError);
    expect(missing.message).toMatch(
      /must be an HttpLimiter from createHttpLimiter \(sluice\/http\), got undefined/,
    );
  });

  it("points at createHttpLimiter when given that function's options", async () => {
    const { limiter } = fixture();
    const e = await failure(mount({ limiter, rules: [] }));
    expect(e).toMatchObject({ code: ErrorCode.InvalidOption });
    expect(e.message).toMatch(/createHttpLimiter/);
  });

  it("names the engine's Limiter given in place of the HttpLimiter and shows how to build one", async () => {
    const { limiter } = fixture();
    const e = await failure(mount(limiter));
    expect(e).toBeInstanceOf(SluiceError);
    expect(e.code).toBe(ErrorCode.InvalidOption);
    expect(e.message).toMatch(
      /must be an HttpLimiter from createHttpLimiter \(sluice\/http\), got a Limiter \(the engine of 'sluice'\)/,
    );
    // The example names a policy of the limiter given, so it can be pasted as it is.
    expect(e.message).toContain(
      "createHttpLimiter({ limiter, rules: [{ path: '/api/*', policies: ['rl.read'], key: 'ip' }] })",
    );
    expect(e.message).not.toMatch(/belongs to another rate limiter/);
    expect(e.details).toMatchObject({ given: 'a Limiter' });
    expect(String(e.details.option)).toMatch(/limiter\)?$/);
  });

  it('says "an object", never "a object", for an object that is no limiter', async () => {
    const e = await failure(mount(new Map()));
    expect(e.message).toMatch(/got an object$/);
    expect(e.message).not.toMatch(/\ba object\b/);
  });

  it('mounts with valid options', async () => {
    await expect(mount(fixture().http, { identify: () => undefined, warn: () => {} })).resolves.toBeDefined();
  });
});

describe('Fastify plugin errors', () => {
  it('are SluiceErrors, never TypeErrors', async () => {
    for (const options of [{ limiter: {} }, { limiter: fixture().http, hook: 'onSend' }]) {
      const app = Fastify();
      apps.push(app);
      const e = await failure(app.register(sluiceFastify, options as never));
      expect(e).toBeInstanceOf(SluiceError);
      expect(e.code).toBe(ErrorCode.InvalidOption);
    }
  });

  it("accepts register's own options next to the plugin's", async () => {
    const app = Fastify();
    apps.push(app);
    await app.register(sluiceFastify, { limiter: fixture().http, logLevel: 'warn' } as never);
    app.get('/api/x', async () => 'ok');
    expect((await app.inject({ url: '/api/x' })).statusCode).toBe(200);
  });
});
