/** Small fixtures shared by the adapter-specific tests. */
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import {
  type Check,
  type Decision,
  ErrorCode,
  Limiter,
  ManualClock,
  type RateLimitStore,
  SluiceError,
} from '../../src/core/index.js';
import { createHttpLimiter, type HttpLimiterOptions } from '../../src/http/index.js';
import { MemoryStore } from '../../src/memory/index.js';

/** A store whose every call fails the way a remote store surfaces an outage (failure mode "throw"). */
export class FailingStore implements RateLimitStore {
  readonly kind = 'failing';
  #fail(): never {
    throw new SluiceError(ErrorCode.StoreUnavailable, 'store down (test)');
  }
  decide(_c: readonly Check[], _n: number): Promise<Decision> {
    return Promise.reject(new SluiceError(ErrorCode.StoreUnavailable, 'store down (test)'));
  }
  reserve(): Decision {
    return this.#fail();
  }
  peek(): Decision {
    return this.#fail();
  }
  refund(): void {}
  reset(): void {}
  close(): void {}
}

/** An async wrapper of the memory store, as a remote store answers. */
export class AsyncMemoryStore implements RateLimitStore {
  readonly kind = 'async-memory';
  constructor(readonly inner: MemoryStore) {}
  decide = async (c: readonly Check[], n: number) => this.inner.decide(c, n);
  reserve = async (c: readonly Check[], n: number) => this.inner.reserve(c, n);
  peek = async (c: readonly Check[], n: number) => this.inner.peek(c, n);
  refund = async (c: readonly Check[], n: number) => this.inner.refund(c, n);
  reset = async (c: readonly Check[]) => this.inner.reset(c);
  close = async () => this.inner.close();
}

/** A limiter with rl.read (burst 3) and rl.write (burst 2); `store` picks sync, async or failing. */
export function fixture(
  store: 'sync' | 'async' | 'failing' = 'sync',
  options: Partial<HttpLimiterOptions> = {},
) {
  const clock = new ManualClock(0);
  const memory = new MemoryStore({ clock, sweepIntervalMs: 0 });
  const limiter = new Limiter({
    policies: [
      { name: 'rl.read', quota: 300, window: 60, burst: 3 },
      { name: 'rl.write', quota: 120, window: 60, burst: 2 },
    ],
    store: store === 'sync' ? memory : store === 'async' ? new AsyncMemoryStore(memory) : new FailingStore(),
  });
  const http = createHttpLimiter({
    limiter,
    rules: [
      { path: '/api/*', policies: ['rl.read'] },
      { operation: 'rl.write', policies: ['rl.write'] },
    ],
    ...options,
  });
  return { clock, limiter, http };
}

/** Listens on 127.0.0.1 and a free port. */
export function listen(server: Server): Promise<{ url: string; close: () => Promise<void> }> {
  return new Promise((resolve) => {
    server.listen(0, '127.0.0.1', () =>
      resolve({
        url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
        close: () => {
          server.closeAllConnections();
          return new Promise<void>((r) => server.close(() => r()));
        },
      }),
    );
  });
}

/** A limiter charging `llm.tokens` the JSON usage of each answer, on a frozen clock so nothing refills. */
export function tokenLimiter() {
  const clock = new ManualClock(0);
  return createHttpLimiter({
    limiter: new Limiter({
      clock,
      policies: [{ name: 'llm.tokens', quota: 10000, window: 60 }],
      store: new MemoryStore({ clock, sweepIntervalMs: 0 }),
    }),
    rules: [
      {
        path: '/v1/*',
        policies: ['llm.tokens'],
        key: 'ip',
        settle: { json: 'usage.total_tokens', reserve: 1 },
      },
    ],
  });
}

/**
 * The tokens the first answer to `GET /v1/x` was charged: what remained after its admission less what remains
 * after the next admission, once the first settled. `serve` builds the server around the handler.
 */
export async function chargedByFirstAnswer(
  serve: (h: (req: IncomingMessage, res: ServerResponse) => void) => Server,
  handle: (res: ServerResponse) => void,
): Promise<number> {
  let closed: Promise<void> = Promise.resolve();
  const s = await listen(
    serve((_req, res) => {
      // The feed's own close listener was added first, so the settlement is done when this one runs.
      closed = new Promise((r) => res.once('close', () => r()));
      handle(res);
    }),
  );
  const remaining = (r: Response) => Number(/r=(\d+)/.exec(r.headers.get('ratelimit') ?? '')?.[1]);
  const first = await fetch(`${s.url}/v1/x`);
  await first.text();
  await closed;
  const second = await fetch(`${s.url}/v1/x`);
  await second.text();
  await s.close();
  return remaining(first) - remaining(second);
}
