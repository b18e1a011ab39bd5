import fc from 'fast-check';
import { Redis } from 'ioredis';
import { parseList } from 'structured-headers';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type RedisServer, startRedisServer } from '../../../test/support/redis-server.js';
import {
  type Check,
  type Decision,
  definePolicy,
  ManualClock,
  type Policy,
  type RateLimitStore,
} from '../src/core/index.js';
import { formatDecisionHeaders, rateLimitProblem, rateLimitProblemBody } from '../src/http/index.js';
import { MemoryStore } from '../src/memory/index.js';
import { type FailureMode, RedisStore } from '../src/redis/index.js';
import { expectWellFormedDecision } from '../src/testing/index.js';

/**
 * Whatever the store and whatever its failure mode (memory; Redis up; Redis down with open, closed or local on
 * one to four nodes), no NaN, fraction or negative number may reach r, t, Retry-After, the legacy headers or a
 * field of the problem body. Checked through the HTTP layer's own formatters, the ones adapters and the gateway
 * send, over random policies, costs, clock steps and operations.
 */

const START = 1_700_000_000_000;
const WALL_MS = 1_701_936_000_000;
const WHOLE = /^(0|[1-9][0-9]*)$/;
let server: RedisServer;
let up: Redis;
/** A client of a port nothing listens on, failing every call at once (no offline queue): Redis is down. */
let down: Redis;
let n = 0;

beforeAll(async () => {
  server = await startRedisServer();
  up = new Redis({ host: server.host, port: server.port });
  down = new Redis({ host: '127.0.0.1', port: 1, enableOfflineQueue: false, lazyConnect: true });
  down.on('error', () => {});
});
afterAll(async () => {
  down?.disconnect();
  await up?.quit();
  await server?.stop();
});

const policyArb = fc.record({
  quota: fc.oneof(fc.integer({ min: 1, max: 10 }), fc.integer({ min: 1, max: 100_000 })),
  window: fc.constantFrom(1, 7, 60, 3600, 86_400),
  burst: fc.oneof(fc.integer({ min: 1, max: 5 }), fc.integer({ min: 1, max: 10_000 })),
  shadow: fc.boolean(),
  queue: fc.option(fc.record({ limit: fc.integer({ min: 1, max: 5 }), maxWaitMs: fc.nat(120_000) }), {
    nil: undefined,
  }),
});

const opArb = fc.record({
  advance: fc.oneof(fc.constant(0), fc.integer({ min: 1, max: 5_000 }), fc.integer({ min: 0, max: 600_000 })),
  cost: fc.oneof(fc.constant(1), fc.integer({ min: 1, max: 12 })),
  which: fc.subarray([0, 1, 2], { minLength: 1 }),
  kind: fc.constantFrom('decide', 'decide', 'reserve', 'peek', 'refund'),
});

/** Every header and body field a decision can produce, checked for whole, non-negative numbers. */
function expectCleanOutput(d: Decision, cost: number): void {
  expectWellFormedDecision(d, cost);
  const headers = formatDecisionHeaders(d, { mode: 'both', nowMs: WALL_MS });
  const enforcing = d.outcomes.filter((o) => !o.policy.shadow);
  for (const [name, value] of headers) {
    if (name === 'RateLimit') {
      const items = parseList(value);
      expect(items).toHaveLength(enforcing.length);
      items.forEach(([, params], i) => {
        // Equal to the decision's own values: the formatters clamp, so a NaN upstream would show as a mismatch.
        expect(params.get('r')).toBe(enforcing[i].remaining);
        expect(params.get('t')).toBe(enforcing[i].resetSeconds);
      });
    } else if (name === 'Retry-After') {
      expect(value).toMatch(WHOLE);
      expect(Number(value)).toBeGreaterThanOrEqual(1);
      expect(Number(value)).toBe(Math.max(1, d.retryAfterSeconds));
    } else if (
      name === 'X-RateLimit-Limit' ||
      name === 'X-RateLimit-Remaining' ||
      name === 'X-RateLimit-Reset'
    ) {
      expect(value, name).toMatch(WHOLE);
    }
  }
  // A cost above a burst is never admitted: no Retry-After is sent for it (D-G168), and one is for every other denial.
  if (!d.allowed && d.reason !== 'cost_exceeds_burst')
    expect(headers.map(([h]) => h)).toContain('Retry-After');
  if (d.reason === 'cost_exceeds_burst') expect(headers.map(([h]) => h)).not.toContain('Retry-After');
  if (d.allowed) return;
  const input = { decision: d, path: '/api/x?q=1', correlationId: 'corr-1', nowMs: WALL_MS };
  const body = rateLimitProblemBody(input);
  expect(body).not.toMatch(/NaN|null|undefined|Infinity/);
  const parsed = JSON.parse(body) as Record<string, unknown>;
  expect(parsed).toEqual(JSON.parse(JSON.stringify(rateLimitProblem(input))));
  for (const field of ['status', 'limit', 'remaining', 'reset', 'retryAfter']) {
    if (field in parsed)
      expect(parsed[field], field).toSatisfy((v: unknown) => Number.isInteger(v) && (v as number) >= 0);
  }
  // Nor a retryAfter member for it: no wait admits it. Every other denial advises one of 1 s at least.
  if (d.reason === 'cost_exceeds_burst') expect(parsed).not.toHaveProperty('retryAfter');
  else expect(parsed.retryAfter).toBeGreaterThanOrEqual(1);
}

type Make = (clock: ManualClock) => RateLimitStore;

const redisDown =
  (failureMode: FailureMode, nodeCount: number): Make =>
  (clock) =>
    new RedisStore({ client: down, clock, failureMode, nodeCount, prefix: `fm:${n++}:` });

const cases: [string, (nodeCount: number) => Make, number][] = [
  ['memory', () => (clock) => new MemoryStore({ clock, sweepIntervalMs: 0 }), 100],
  [
    'redis (up)',
    (nodeCount) => (clock) =>
      new RedisStore({
        client: up,
        clock,
        failureMode: 'local',
        nodeCount,
        timeoutMs: 10_000,
        prefix: `fu:${n++}:`,
      }),
    25,
  ],
  ['redis down, failure mode open', (nodeCount) => redisDown('open', nodeCount), 60],
  ['redis down, failure mode closed', (nodeCount) => redisDown('closed', nodeCount), 60],
  ['redis down, failure mode local', (nodeCount) => redisDown('local', nodeCount), 100],
];

describe('no NaN, fraction or negative number reaches a header or a problem body', () => {
  it.each(cases)('%s', async (_name, factory, numRuns) => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(policyArb, { minLength: 3, maxLength: 3 }),
        fc.integer({ min: 1, max: 4 }),
        fc.array(opArb, { minLength: 1, maxLength: 30 }),
        async (specs, nodeCount, ops) => {
          const clock = new ManualClock(START);
          const store = factory(nodeCount)(clock);
          const policies: Policy[] = specs.map((s, i) => definePolicy({ name: `p${i}`, ...s }));
          const key = `k${n++}`;
          try {
            for (const o of ops) {
              clock.advance(o.advance);
              const checks: Check[] = o.which.map((i) => ({ policy: policies[i], key }));
              if (o.kind === 'refund') {
                await store.refund(checks, o.cost);
                continue;
              }
              const d =
                o.kind === 'decide'
                  ? await store.decide(checks, o.cost)
                  : o.kind === 'reserve'
                    ? await store.reserve(checks, o.cost)
                    : await store.peek(checks, o.cost);
              expectCleanOutput(d, o.cost);
            }
          } finally {
            await store.close();
          }
        },
      ),
      { numRuns },
    );
  });
});
