/**
 * The Redis store on a real local Redis Cluster, with the checks of one call in different slots (a tenant's policy
 * beside a policy keyed by IP): each slot's checks run in one script, and a denial in one slot gives back what the
 * other slots took, so the call stays all or nothing as far as a Cluster allows. Concurrency slots and settled
 * costs work across slots too. The stores' clock is a `ManualClock`, so no refill happens between calls.
 */
import { Cluster } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type RedisCluster, startRedisCluster } from '../../../../test/support/redis-server.js';
import { type Check, definePolicy, ManualClock } from '../core/index.js';
import { clusterSlot, RedisStore, type RedisStoreOptions } from './index.js';

const START = 1_700_000_000_000;
const tier = definePolicy({ name: 'tier', quota: 600, window: 60, burst: 5 });
const byIp = definePolicy({ name: 'byip', quota: 60, window: 60, burst: 3 });
const slots = definePolicy({ name: 'jobs', concurrent: 2, retryAfter: 2 });
let n = 0;
const fresh = (label: string) => `${label}-${n++}`;

let cluster: RedisCluster;
let clustered: Cluster;

beforeAll(async () => {
  cluster = await startRedisCluster();
  clustered = new Cluster([...cluster.startupNodes]);
});

afterAll(async () => {
  await Promise.allSettled([clustered?.quit()]);
  await cluster?.stop();
});

function store(): RedisStore {
  return new RedisStore({ client: clustered, clock: new ManualClock(START), timeoutMs: 10_000 });
}

/** A tenant key and an IP key whose buckets fall in different Cluster slots. */
function keys(s: RedisStore): { tenant: string; ip: string } {
  for (;;) {
    const tenant = fresh('tenant:acme:client');
    const ip = fresh('ip:127.0.0');
    if (clusterSlot(s.keyOf(tier, tenant)) !== clusterSlot(s.keyOf(byIp, ip))) return { tenant, ip };
  }
}

const remaining = async (s: RedisStore, checks: Check[]) =>
  (await s.peek(checks, 1)).outcomes.map((o) => o.remaining);

describe('RedisStore on a Cluster: checks of one call in different slots', () => {
  it('decides them together: tokens taken in both slots, outcomes in the order given', async () => {
    const s = store();
    const { tenant, ip } = keys(s);
    const checks: Check[] = [
      { policy: tier, key: tenant },
      { policy: byIp, key: ip },
    ];
    const d = await s.decide(checks, 1);
    expect(d).toMatchObject({ allowed: true, reason: 'allowed', retryAfterSeconds: 0 });
    expect(d.outcomes.map((o) => [o.policy.name, o.key, o.remaining])).toEqual([
      ['tier', tenant, 4],
      ['byip', ip, 2],
    ]);
    expect(await remaining(s, checks)).toEqual([4, 2]);
    s.close();
  });

  it('is all or nothing: a denial in one slot gives back what the other slot took', async () => {
    const s = store();
    const { tenant, ip } = keys(s);
    const checks: Check[] = [
      { policy: tier, key: tenant },
      { policy: byIp, key: ip },
    ];
    const got = [];
    for (let i = 0; i < 4; i++) got.push(await s.decide(checks, 1));
    expect(got.map((d) => d.allowed)).toEqual([true, true, true, false]);
    const denied = got[3];
    expect(denied.reason).toBe('limited');
    expect(denied.violated.map((o) => o.policy.name)).toEqual(['byip']);
    expect(denied.retryAfterSeconds).toBe(1);
    // The tenant's bucket shows what it holds, its token given back.
    expect(denied.outcomes.map((o) => [o.limited, o.remaining])).toEqual([
      [false, 2],
      [true, 0],
    ]);
    expect(await remaining(s, checks)).toEqual([2, 0]);
    // Only the tenant's policy left: its two tokens are still there.
    const alone = [{ policy: tier, key: tenant }];
    expect((await s.decide(alone, 2)).allowed).toBe(true);
    expect((await s.decide(alone, 1)).allowed).toBe(false);
    s.close();
  });

  it('peeks and reserves across slots', async () => {
    const s = store();
    const { tenant, ip } = keys(s);
    const checks: Check[] = [
      { policy: byIp, key: ip },
      { policy: tier, key: tenant },
    ];
    const p = await s.peek(checks, 4);
    expect(p).toMatchObject({ allowed: false, reason: 'cost_exceeds_burst' });
    expect(p.outcomes.map((o) => o.limited)).toEqual([true, false]);
    const r = await s.reserve(checks, 2);
    expect(r.allowed).toBe(true);
    expect(await remaining(s, checks)).toEqual([1, 3]);
    s.close();
  });

  it('takes concurrency slots across slots, gives them back on a denial elsewhere and on release', async () => {
    const s = store();
    const { tenant, ip } = keys(s);
    // The slots are the tenant's, the rate limit the IP's.
    const checks: Check[] = [
      { policy: slots, key: tenant },
      { policy: byIp, key: ip },
    ];
    expect((await s.decide(checks, 1)).allowed).toBe(true);
    expect((await s.decide(checks, 1)).allowed).toBe(true);
    // Both slots held: the third call is refused by the slots, and the IP's token it took comes back.
    const third = await s.decide(checks, 1);
    expect(third.allowed).toBe(false);
    expect(third.violated.map((o) => o.policy.name)).toEqual(['jobs']);
    expect(await remaining(s, checks)).toEqual([0, 1]);
    // A release (as the gateway gives back a request's slots) frees one slot.
    await s.refund([{ policy: slots, key: tenant }], 1);
    expect(await remaining(s, checks)).toEqual([1, 1]);
    // The IP's last token goes elsewhere: the next call is refused by the IP, and the slot it took comes back.
    expect((await s.decide([{ policy: byIp, key: ip }], 1)).allowed).toBe(true);
    const fourth = await s.decide(checks, 1);
    expect(fourth.violated.map((o) => o.policy.name)).toEqual(['byip']);
    expect(await remaining(s, checks)).toEqual([1, 0]);
    await s.renewLeases();
    s.close();
  });

  it('settles costs and resets buckets across slots', async () => {
    const s = store();
    const { tenant, ip } = keys(s);
    const checks: Check[] = [
      { policy: tier, key: tenant },
      { policy: byIp, key: ip },
    ];
    expect((await s.decide(checks, 1)).allowed).toBe(true);
    await s.settle(checks, 1);
    expect(await remaining(s, checks)).toEqual([3, 1]);
    await s.settle(checks, -2);
    expect(await remaining(s, checks)).toEqual([5, 3]);
    await s.decide(checks, 2);
    await s.reset(checks);
    expect(await remaining(s, checks)).toEqual([5, 3]);
    s.close();
  });

  it('spends one script call per slot, sent together', async () => {
    const s = store();
    const { tenant, ip } = keys(s);
    const before = s.stats().scriptCalls;
    await s.decide(
      [
        { policy: tier, key: tenant },
        { policy: byIp, key: ip },
      ],
      1,
    );
    expect(s.stats().scriptCalls - before).toBe(2);
    s.close();
  });

  it('follows the failure mode when the node of one slot is down, giving back what the live slot took', async () => {
    const down = await startRedisCluster();
    const client = new Cluster([...down.startupNodes], { enableOfflineQueue: false });
    client.on('error', () => {});
    try {
      await new Promise((ready) => client.once('ready', ready));
      const make = (failureMode: 'open' | 'closed', extra: Partial<RedisStoreOptions> = {}) =>
        new RedisStore({ client, failureMode, clock: new ManualClock(START), timeoutMs: 500, ...extra });
      const open = make('open', { breaker: { failureThreshold: 100 } });
      const closed = make('closed', { breaker: { failureThreshold: 100 } });
      const nodeOf = (s: RedisStore, c: Check) => {
        const at = (client as unknown as { slots: string[][] }).slots[
          clusterSlot(s.keyOf(c.policy, c.key))
        ][0];
        return Number(at.slice(at.lastIndexOf(':') + 1));
      };
      // The tenant's bucket on the node about to stop, the IP's on another.
      let checks: Check[];
      for (;;) {
        checks = [
          { policy: tier, key: fresh('tenant') },
          { policy: byIp, key: fresh('ip') },
        ];
        if (nodeOf(open, checks[0]) === down.nodes[0].port && nodeOf(open, checks[1]) !== down.nodes[0].port)
          break;
      }
      const ipOnly = [checks[1]];
      await down.nodes[0].stop();
      const o = await open.decide(checks, 1);
      expect(o).toMatchObject({ allowed: true, reason: 'store_unavailable_open' });
      // Admitted: the live slot keeps the token it took.
      expect((await open.peek(ipOnly, 1)).outcomes[0].remaining).toBe(2);
      const c = await closed.decide(checks, 1);
      expect(c).toMatchObject({ allowed: false, reason: 'store_unavailable' });
      // Refused: the live slot's token came back.
      expect((await closed.peek(ipOnly, 1)).outcomes[0].remaining).toBe(2);
      // Each such failure is reported like any store error (the gateway's error metrics and logs).
      const errors: unknown[] = [];
      closed.on('error', (e) => errors.push(e));
      expect((await closed.decide(checks, 1)).reason).toBe('store_unavailable');
      expect(errors).toHaveLength(1);
      expect(closed.stats().errors).toBe(2);
      for (const s of [open, closed]) s.close();
    } finally {
      client.disconnect();
      await down.stop();
    }
  });
});
