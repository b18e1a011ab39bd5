import { fileURLToPath } from 'node:url';
import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { client, send, startGateway, startUpstream, type TestGateway, type TestUpstream } from './support.js';

/**
 * The Policy Engine's limiter (examples/policy-engine.yaml): 50 tokens, a queue of 10, refilled 5 tokens every
 * 10 s, problem code ERR_POL_007, per client IP. The clock is a ManualClock: queued requests are admitted only
 * when the test moves it.
 */

const EXAMPLE = fileURLToPath(new URL('../examples/policy-engine.yaml', import.meta.url));
const agent = client({});
let upstream: TestUpstream;
let t: TestGateway;

/** Lets the gateway run what is ready (sockets, microtasks); no time passes on its clock. */
const settle = async (rounds = 5) => {
  for (let i = 0; i < rounds; i++) await new Promise<void>((resolve) => setTimeout(resolve, 5));
};

/** Waits until the gateway has `n` requests asleep in the queue (a ManualClock sleep each). */
async function asleep(n: number): Promise<void> {
  for (let i = 0; i < 400 && t.clock.pendingSleeps !== n; i++) await settle(1);
  expect(t.clock.pendingSleeps).toBe(n);
}

beforeAll(async () => {
  upstream = await startUpstream();
  t = await startGateway(EXAMPLE, { overrides: { upstream: upstream.url } });
});

afterAll(async () => {
  await t?.gateway.close();
  await upstream?.close();
  await agent.close();
});

describe('the Policy Engine limiter', () => {
  it('admits 50 at once, queues 10 admitted 5 per 10 s step in order, refuses the next with ERR_POL_007, and frees the place of a client that leaves', async () => {
    const url = `${t.gateway.url}/api/policy/evaluate`;
    const first = await Promise.all(Array.from({ length: 50 }, () => send(agent, url)));
    expect(first.map((r) => r.status)).toEqual(new Array(50).fill(200));

    const order: number[] = [];
    // One at a time, each asleep in the queue before the next is sent: arrival order is the index.
    const queued: ReturnType<typeof send>[] = [];
    for (let i = 0; i < 9; i++) {
      queued.push(
        send(agent, url).then((r) => {
          order.push(i);
          return r;
        }),
      );
      await asleep(i + 1);
    }
    // The tenth place goes to a client that gives up while it waits.
    const leaving = new AbortController();
    const other = client({});
    const gone = request(url, { dispatcher: other, signal: leaving.signal }).catch((e: Error) => e.name);
    await asleep(10);
    const refused = await send(agent, url);
    expect(refused.status).toBe(429);
    expect(refused.json()).toMatchObject({ status: 429, code: 'ERR_POL_007' });
    expect(order).toEqual([]);

    leaving.abort();
    expect(await gone).toBe('AbortError');
    await other.close();
    await asleep(9);
    // Its place and its token are free again: a newcomer queues (at the end) instead of being refused.
    const newcomer = send(agent, url).then((r) => {
      order.push(9);
      return r;
    });
    await asleep(10);

    // Tokens come 5 at a time every 10 s, none in between (a continuous 30 per minute would have admitted 4 by now).
    t.clock.advance(9_999);
    await settle();
    expect(t.clock.pendingSleeps).toBe(10);
    expect(order).toEqual([]);
    // Each step admits the next 5 in line, in arrival order; the newcomer is last.
    for (let step = 1; step <= 2; step++) {
      t.clock.advance(step === 1 ? 1 : 10_000);
      await asleep(10 - 5 * step);
      for (let i = 0; i < 50 && order.length < 5 * step; i++) await settle(1);
      // The five of a step are admitted together; their answers may cross on the way back.
      expect([...order].sort((a, b) => a - b)).toEqual(Array.from({ length: 5 * step }, (_, i) => i));
    }
    for (const r of await Promise.all(queued)) expect(r.status).toBe(200);
    expect((await newcomer).status).toBe(200);

    const metrics = await t.gateway.metrics.metrics();
    expect(metrics).toContain('sluice_queue_length{policy="policy-engine"} 0');
    expect(metrics).toContain('sluice_queue_wait_seconds_count{policy="policy-engine",result="admitted"} 10');
    expect(metrics).toContain('sluice_queue_wait_seconds_count{policy="policy-engine",result="abandoned"} 1');
  });
});
