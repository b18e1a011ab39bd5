import { spawnSync } from 'node:child_process';
import { Redis } from 'ioredis';
import { describe, expect, it } from 'vitest';
import { startRedisServer } from '../../../../test/support/redis-server.js';
import { type Decision, definePolicy, ManualClock } from '../core/index.js';
import {
  type FailoverEvent,
  logStoreTransitions,
  type RecoverEvent,
  RedisStore,
  type RedisStoreOptions,
  reconnectBackoff,
  type StoreErrorEvent,
} from './index.js';

const START = 1_700_000_000_000;
const write = definePolicy({ name: 'rl.write', quota: 120, window: 60, burst: 3 });
const read = definePolicy({ name: 'rl.read', quota: 600, window: 60, burst: 100 });
const DECISION_FIELDS = ['allowed', 'cost', 'delayMs', 'outcomes', 'reason', 'retryAfterSeconds', 'violated'];

/** A client of a port nothing listens on, failing every call at once (no offline queue): Redis is down. */
function down(): Redis {
  const client = new Redis({ host: '127.0.0.1', port: 1, enableOfflineQueue: false, lazyConnect: true });
  client.on('error', () => {});
  return client;
}

/** A client of a throwaway server that fails calls at once while it is down and reconnects within 50 ms. */
function reconnecting(port: number): Redis {
  const client = new Redis({
    host: '127.0.0.1',
    port,
    enableOfflineQueue: false,
    retryStrategy: reconnectBackoff({ initialMs: 10, maxMs: 50 }),
  });
  client.on('error', () => {});
  return client;
}

/** Waits (real time) until `check` holds; for state reached through real I/O (a kill, a restart, a reconnect). */
async function eventually(check: () => boolean | Promise<boolean>, what: string): Promise<void> {
  const deadline = Date.now() + 10_000;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

/** A logger that keeps its lines. */
function lines() {
  const out: { fields: Record<string, unknown>; message: string }[] = [];
  return {
    out,
    logger: { warn: (fields: Record<string, unknown>, message: string) => out.push({ fields, message }) },
  };
}

describe('RedisStore while Redis is down', () => {
  it('local: answers a one-policy call with a plain decision of exactly the Decision fields', async () => {
    const client = down();
    const s = new RedisStore({ client, clock: new ManualClock(START), failureMode: 'local', nodeCount: 1 });
    const c = [{ policy: write, key: 'one' }];
    const seen: Decision[] = [];
    for (let i = 0; i < 4; i++) seen.push(await s.decide(c, 1));
    for (const d of seen) {
      expect(Object.keys(d).sort()).toEqual(DECISION_FIELDS);
      expect(JSON.stringify(d)).not.toMatch(/"units"|"before"|"cached"/);
    }
    expect(seen.map((d) => d.reason)).toEqual(['allowed', 'allowed', 'allowed', 'limited']);
    expect(seen[3]).toMatchObject({ allowed: false, retryAfterSeconds: 1, delayMs: 0, cost: 1 });
    expect(seen[3].violated).toEqual([seen[3].outcomes[0]]);
    expect(seen[3].outcomes[0]).toMatchObject({ policy: write, key: 'one', limited: true, remaining: 0 });
    const big = await s.decide(c, 4);
    // Empty bucket, 3 tokens at 2 per second: full in 1.5 s, so 2.
    expect(big).toMatchObject({ reason: 'cost_exceeds_burst', retryAfterSeconds: 2 });
    expect(Object.keys(await s.peek(c, 1)).sort()).toEqual(DECISION_FIELDS);
    expect(Object.keys(await s.reserve(c, 1)).sort()).toEqual(DECISION_FIELDS);
    client.disconnect();
  });

  it('counts the buckets it holds (deny cache and local buckets) and their evictions, as numbers', async () => {
    const client = down();
    const s = new RedisStore({ client, clock: new ManualClock(START), failureMode: 'local' });
    expect(s.stats()).toMatchObject({ trackedKeys: 0, evictions: 0, denyCacheSize: 0 });
    for (let i = 0; i < 5; i++) await s.decide([{ policy: read, key: `k${i}` }], 1);
    expect(s.stats()).toMatchObject({ trackedKeys: 5, evictions: 0 });
    const closed = new RedisStore({ client, clock: new ManualClock(START), failureMode: 'closed' });
    await closed.decide([{ policy: read, key: 'k' }], 1);
    expect(closed.stats()).toMatchObject({ trackedKeys: 0, evictions: 0 });
    client.disconnect();
  });

  it('rejects a logger without warn and an unknown event name', () => {
    const client = down();
    expect(() => new RedisStore({ client, logger: {} } as unknown as RedisStoreOptions)).toThrow(
      /logger must be an object with a warn\(fields, message\) method/,
    );
    const s = new RedisStore({ client });
    expect(() => s.on('nope' as never, () => {})).toThrow(
      /event must be one of 'failover', 'recover', 'error'/,
    );
    client.disconnect();
  });
});

describe('RedisStore outage events and logs (real redis-server killed and restarted)', () => {
  it('emits error per failed script call, and logs one warn line on entering and one on leaving the failure mode', async () => {
    const own = await startRedisServer();
    const client = reconnecting(own.port);
    const clock = new ManualClock(START);
    const { out, logger } = lines();
    const s = new RedisStore({
      client,
      clock,
      failureMode: 'local',
      nodeCount: 2,
      timeoutMs: 2_000,
      logger,
      breaker: { failureThreshold: 2, probeIntervalMs: 500 },
    });
    const errors: StoreErrorEvent[] = [];
    const failovers: FailoverEvent[] = [];
    const recoveries: RecoverEvent[] = [];
    s.on('error', (e) => errors.push(e));
    s.on('failover', (e) => failovers.push(e));
    s.on('recover', (e) => recoveries.push(e));
    // A second logger through the standalone function: the gateway's way.
    const second = lines();
    const stop = logStoreTransitions(s, second.logger);
    const c = [{ policy: read, key: `outage-${Date.now()}` }];
    try {
      await eventually(() => client.status === 'ready', 'the client to connect');
      expect((await s.decide(c, 1)).reason).toBe('allowed');
      await own.kill();
      await eventually(() => client.status !== 'ready', 'the client to notice');
      await s.decide(c, 1);
      expect(errors).toHaveLength(1);
      expect(errors[0].timeout).toBe(false);
      expect(out).toEqual([]);
      await s.decide(c, 1);
      expect(s.stats()).toMatchObject({ state: 'fallback', errors: 2, failovers: 1 });
      expect(out).toHaveLength(1);
      expect(out[0].message).toBe('rate limit store unavailable: decisions follow the failure mode "local"');
      expect(out[0].fields).toMatchObject({ store: 'redis', failureMode: 'local' });
      expect(typeof out[0].fields.cause).toBe('string');
      // While switched no script call is sent, so no further error is reported.
      for (let i = 0; i < 5; i++) await s.decide(c, 1);
      expect(errors).toHaveLength(2);
      clock.advance(500);
      await own.restart();
      // The reopened connection brings the store back, with no request and before its next probe (D-G78).
      await eventually(() => s.stats().state === 'redis', 'the recovery');
      expect(out).toHaveLength(2);
      expect(out[1].message).toBe('rate limit store answers again: decisions come from the store');
      expect(out[1].fields).toMatchObject({ store: 'redis', downtimeMs: 500, fallbackDecisions: 6 });
      expect(recoveries).toEqual([{ downtimeMs: 500, fallbackDecisions: 6 }]);
      expect(second.out.map((l) => l.message)).toEqual(out.map((l) => l.message));
      expect(failovers).toHaveLength(1);
    } finally {
      stop();
      client.disconnect();
      await own.stop();
    }
  });
});

describe('RedisStore recovers without traffic (real redis-server killed and restarted on its port)', () => {
  const seal = definePolicy({ name: 'system.seal', quota: 5, window: 3600 });

  for (const failureMode of ['open', 'local', 'closed'] as const) {
    it(`${failureMode}: a background probe brings it back with no call, and the next burst is exact`, async () => {
      const own = await startRedisServer();
      const client = reconnecting(own.port);
      const clock = new ManualClock(START);
      const s = new RedisStore({
        client,
        clock,
        failureMode,
        timeoutMs: 2_000,
        breaker: { failureThreshold: 2, probeIntervalMs: 250 },
      });
      const recoveries: RecoverEvent[] = [];
      s.on('recover', (e) => recoveries.push(e));
      try {
        await eventually(() => client.status === 'ready', 'the client to connect');
        expect(clock.pendingSleeps).toBe(0); // no timer while Redis answers
        await own.kill();
        await eventually(() => client.status !== 'ready', 'the client to notice');
        for (let i = 0; i < 12; i++) await s.decide([{ policy: seal, key: 'outage' }], 1);
        expect(s.stats().state).toBe('fallback');
        // One timer for the whole store, however many keys were decided.
        expect(clock.pendingSleeps).toBe(1);
        await own.restart();
        await eventually(() => client.status === 'ready', 'the client to reconnect');
        // No call at all from here: only the store's clock moves, one probe interval at a time.
        await eventually(() => {
          clock.advance(250);
          return s.stats().state === 'redis';
        }, 'the recovery');
        expect(recoveries).toHaveLength(1);
        expect(s.stats().decisions).toBe(12);
        expect(clock.pendingSleeps).toBe(0);
        const burst = await Promise.all(
          Array.from({ length: 200 }, () => s.decide([{ policy: seal, key: 'fresh' }], 1)),
        );
        expect(burst.filter((d) => d.allowed)).toHaveLength(5);
        expect(new Set(burst.filter((d) => !d.allowed).map((d) => d.reason))).toEqual(new Set(['limited']));
        // Down again: the probe timer comes back, and close() stops it.
        await own.kill();
        await eventually(async () => {
          await s.decide([{ policy: seal, key: 'again' }], 1);
          return s.stats().state === 'fallback';
        }, 'the second switch');
        expect(clock.pendingSleeps).toBe(1);
        s.close();
        expect(clock.pendingSleeps).toBe(0);
      } finally {
        client.disconnect();
        await own.stop();
      }
    });
  }
});

describe('RedisStore probe timer on real time', () => {
  it('does not keep a process alive: a store left in its failure mode lets node exit on its own', () => {
    // A real client that gives up connecting (nothing listens on port 1), so that only the store's timer is left.
    const script = `
      import { Redis } from 'ioredis';
      import { RedisStore } from ${JSON.stringify(new URL('./index.ts', import.meta.url).pathname)};
      import { definePolicy } from ${JSON.stringify(new URL('../core/index.ts', import.meta.url).pathname)};
      const client = new Redis({ host: '127.0.0.1', port: 1, lazyConnect: true, enableOfflineQueue: false,
        retryStrategy: () => null });
      client.on('error', () => {});
      const store = new RedisStore({ client, failureMode: 'open', breaker: { failureThreshold: 1 } });
      await store.decide([{ policy: definePolicy({ name: 'p', quota: 1, window: 1 }), key: 'k' }], 1);
      console.log(store.stats().state);
    `;
    const run = spawnSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], {
      encoding: 'utf8',
      timeout: 20_000,
    });
    expect(run.stderr).toBe('');
    expect(run.signal).toBeNull(); // not killed at the timeout: it ended by itself
    expect(run.stdout.trim()).toBe('fallback');
  });
});

describe('reconnectBackoff', () => {
  it('doubles from initialMs up to maxMs and stays there', () => {
    const f = reconnectBackoff();
    expect([1, 2, 3, 4, 5, 6, 100, 10_000].map(f)).toEqual([50, 100, 200, 400, 500, 500, 500, 500]);
    const g = reconnectBackoff({ initialMs: 20, maxMs: 100 });
    expect([0, 1, 2, 3, 4].map(g)).toEqual([20, 20, 40, 80, 100]);
  });

  it('rejects options naming the option', () => {
    expect(() => reconnectBackoff({ initialMs: 0 })).toThrow(/initialMs must be an integer from 1/);
    expect(() => reconnectBackoff({ initialMs: 100, maxMs: 50 })).toThrow(
      /maxMs must be an integer >= initialMs/,
    );
    expect(() => reconnectBackoff({ max: 5 } as never)).toThrow(/reconnectBackoff options.max/);
  });
});
