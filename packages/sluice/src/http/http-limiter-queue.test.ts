import { describe, expect, it } from 'vitest';
import { ErrorCode, Limiter, ManualClock, type PolicyOptions } from '../core/index.js';
import { MemoryStore } from '../memory/index.js';
import { NoopMetrics } from '../metrics/index.js';
import { createHttpLimiter } from './http-limiter.js';
import type { HttpLimiterOptions } from './http-limiter-options.js';
import type { RuleOptions } from './rules.js';
import type { HttpRequestInfo, Verdict } from './types.js';

/** The Policy Engine's limiter as a continuous bucket: 50 tokens, 30 per minute (one every 2 s), a queue of 10. */
const ENGINE: PolicyOptions = {
  name: 'policy-engine',
  quota: 30,
  window: 60,
  burst: 50,
  queue: { limit: 10, maxWaitMs: 20_000 },
};
const PLAIN: PolicyOptions = { name: 'plain', quota: 60, window: 60, burst: 2 };

class QueueRecorder extends NoopMetrics {
  readonly lengths: [string, number][] = [];
  readonly waits: [string, number, string][] = [];
  override setQueueLength(policy: string, length: number): void {
    this.lengths.push([policy, length]);
  }
  override recordQueueWait(policy: string, seconds: number, result: 'admitted' | 'abandoned'): void {
    this.waits.push([policy, seconds, result]);
  }
}

function setup(rules?: RuleOptions[], options: Partial<HttpLimiterOptions> = {}) {
  const clock = new ManualClock(0);
  const limiter = new Limiter({
    policies: [ENGINE, PLAIN],
    store: new MemoryStore({ clock, sweepIntervalMs: 0 }),
    clock,
  });
  const metrics = new QueueRecorder();
  const http = createHttpLimiter({
    limiter,
    rules: rules ?? [
      { name: 'engine', path: '/api/policy/*', policies: ['policy-engine'], problemCode: 'ERR_POL_007' },
      { name: 'plain', path: '/api/plain', policies: ['plain'] },
    ],
    wallClock: () => 1_700_000_000_000 + clock.now(),
    queueMetrics: metrics,
    ...options,
  });
  return { clock, limiter, http, metrics };
}

const req = (r: Partial<HttpRequestInfo> = {}): HttpRequestInfo => ({
  method: 'POST',
  path: '/api/policy/evaluate',
  headers: {},
  remoteAddress: '203.0.113.7',
  ...r,
});

const sync = (v: unknown): Verdict => {
  if (v instanceof Promise) throw new Error('expected a verdict in the same tick');
  return v as Verdict;
};

/** Lets every pending microtask and I/O callback run (no time passes on the manual clock). */
const settle = () => new Promise<void>((resolve) => setImmediate(resolve));

describe('queueing rules', () => {
  it('admit the burst in the same tick, queue the next ten in order, and refuse the one after with the rule code', async () => {
    const { clock, http } = setup();
    for (let i = 0; i < 50; i++) expect(sync(http.evaluate(req())).action).toBe('allow');
    const order: number[] = [];
    const queued = Array.from({ length: 10 }, (_, i) =>
      Promise.resolve(http.evaluate(req())).then((v) => {
        order.push(i);
        return v;
      }),
    );
    await settle();
    const refused = await http.evaluate(req());
    expect(refused).toMatchObject({ action: 'deny', status: 429, outcome: 'limited' });
    expect(JSON.parse(refused.body as string)).toMatchObject({ status: 429, code: 'ERR_POL_007' });
    expect(order).toEqual([]);
    // One token every 2 s: each step admits exactly the next in line.
    for (let step = 1; step <= 10; step++) {
      clock.advance(2_000);
      await settle();
      expect(order).toEqual(Array.from({ length: step }, (_, i) => i));
    }
    for (const v of await Promise.all(queued))
      expect(v).toMatchObject({ action: 'allow', outcome: 'allowed' });
  });

  it('free the place and the token of a client that disconnects', async () => {
    const { clock, http, metrics } = setup();
    for (let i = 0; i < 50; i++) sync(http.evaluate(req()));
    const gone = new AbortController();
    const controllers = Array.from({ length: 10 }, (_, i) => (i === 3 ? gone : new AbortController()));
    const queued = controllers.map((c) => Promise.resolve(http.evaluate(req({ signal: c.signal }))));
    await settle();
    gone.abort(new Error('client closed the connection'));
    const left = await queued[3];
    expect(left).toMatchObject({ action: 'deny', status: 429, outcome: 'queue_abandoned' });
    // Its token came back: a newcomer queues at the end instead of being refused.
    const newcomer = Promise.resolve(http.evaluate(req()));
    await settle();
    clock.advance(20_000);
    expect(await newcomer).toMatchObject({ action: 'allow' });
    expect(metrics.waits.filter(([, , r]) => r === 'abandoned')).toHaveLength(1);
    expect(metrics.waits.filter(([, , r]) => r === 'admitted')).toHaveLength(10);
    expect(metrics.waits.find(([, , r]) => r === 'admitted')).toEqual(['policy-engine', 2, 'admitted']);
    expect(metrics.lengths.at(-1)).toEqual(['policy-engine', 0]);
    expect(Math.max(...metrics.lengths.map(([, n]) => n))).toBe(10);
  });

  it('refuse at once a request whose client is already gone, and wait no longer than maxWait', async () => {
    const { http } = setup();
    for (let i = 0; i < 50; i++) sync(http.evaluate(req()));
    const ac = new AbortController();
    ac.abort();
    expect(await http.evaluate(req({ signal: ac.signal }))).toMatchObject({ outcome: 'queue_abandoned' });
    for (let i = 0; i < 10; i++) void http.evaluate(req());
    await settle();
    expect(await http.evaluate(req())).toMatchObject({ status: 429, outcome: 'limited' });
  });

  it('keep rules without a queueing policy in the same tick, with the default problem code', () => {
    const { http } = setup();
    sync(http.evaluate(req({ path: '/api/plain' })));
    sync(http.evaluate(req({ path: '/api/plain' })));
    const v = sync(http.evaluate(req({ path: '/api/plain' })));
    expect(v.status).toBe(429);
    expect(JSON.parse(v.body as string).code).toBe('rate_limited');
  });

  it('validate problemCode and refuse any queue order but fifo', () => {
    expect(() =>
      setup([{ policies: ['policy-engine'], problemCode: 'bad code with spaces' } as RuleOptions]),
    ).toThrow(
      expect.objectContaining({
        code: ErrorCode.InvalidOption,
        message: expect.stringContaining('rules[0].problemCode'),
      }),
    );
    expect(() => setup([{ policies: ['policy-engine'], queueOrder: 'lifo' } as never])).toThrow(
      expect.objectContaining({ message: expect.stringContaining('rules[0].queueOrder') }),
    );
    expect(() => setup([{ policies: ['policy-engine'], queueOrder: 'fifo' }])).not.toThrow();
  });
});
