import { Cluster } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { spawnHammers } from '../../../../test/support/hammer-processes.js';
import { readBucket } from '../../../../test/support/redis-bucket.js';
import { type RedisCluster, redisCli, startRedisCluster } from '../../../../test/support/redis-server.js';
import { definePolicy } from '../core/index.js';
import { clusterSlot } from './cluster-slot.js';
import { RedisStore } from './index.js';

// Accuracy on a Redis Cluster through a master failover: four Node processes, each with its own RedisStore over
// an ioredis Cluster client, decide concurrently on shared keys spread over three masters, and in the middle of
// the run the replica of one master takes over with CLUSTER FAILOVER. A manual failover loses no acknowledged
// write (the master pauses writes until its replica has caught up), unlike a killed master with asynchronous
// replication, so the buckets' history stays whole and the limits can be checked exactly. failureMode 'closed':
// nothing is admitted without Redis.
//
// Per key, with rate = quota / window, and elapsed from the server's TIME read before the first call to the
// server's TIME read after the last call ended (a generous span):
//
//   admitted <= burst + rate x elapsed
//   admitted >= burst + rate x elapsed - tolerance,
//   tolerance = 1 + rate x (failover window + idle edges) + calls that timed out client-side
//
// - 1: the fraction of a token left in the bucket at the end.
// - rate x failover window: while the cluster re-routes, calls wait (the old master pauses writes) or are refused
//   (failureMode 'closed': a timeout, then the breaker refuses every key of the process until a probe answers),
//   so nothing is taken; a bucket refills meanwhile, but only up to burst, and what refills beyond is lost. The
//   window runs from the CLUSTER FAILOVER command (or the key's first refused call, if earlier) to the promoted
//   replica and the old master both naming the new master (or the key's last refused call, if later). Wall time
//   (Date.now()) of this host, which is also the clock of the local Redis servers' TIME.
// - rate x idle edges: the ms of the elapsed span in which no process was deciding yet (the go message reaching
//   them after the first TIME read) or any more (the last TIME read).
// - calls that timed out client-side (waited the whole timeoutMs): counted as refused here, but the script may
//   still have run and taken a token on the server.
//
// The bucket's own record (its first and last write, in server time) gives a tighter upper bound that must hold
// as well: no lost write means the server never handed out more than burst + rate x (last - first).
const QUOTA = 10;
const WINDOW = 1;
const BURST = 10;
const RATE = QUOTA / WINDOW; // tokens per second
const policy = definePolicy({ name: 'rl.accuracy', quota: QUOTA, window: WINDOW, burst: BURST });
const PROCESSES = 4;
const CONCURRENCY = 4; // callers per process
const KEYS_PER_MASTER = 2;
const DURATION_MS = 6_000;
// Longer than the gateway's 50 ms (a loaded machine's slow answers would refuse calls outside the failover and
// widen the window), short enough that the old master's pause of writes during the failover can refuse some.
const TIMEOUT_MS = 500;
const PROBE_MS = 100;

interface ClusterNode {
  readonly id: string;
  readonly port: number;
  readonly master: boolean;
  readonly masterId: string | undefined;
  readonly slots: readonly (readonly [number, number])[];
}

/** CLUSTER NODES as one node sees it. */
async function clusterNodes(port: number): Promise<ClusterNode[]> {
  const text = await redisCli(port, 'CLUSTER', 'NODES');
  return text
    .split('\n')
    .filter((line) => line.trim() !== '')
    .map((line) => {
      const f = line.split(' ');
      const master = /\bmaster\b/.test(f[2]) && !/\bfail\b/.test(f[2]);
      return {
        id: f[0],
        port: Number(f[1].split('@')[0].split(':').pop()),
        master,
        masterId: f[3] === '-' ? undefined : f[3],
        slots: f
          .slice(8)
          .filter((r) => !r.startsWith('['))
          .map((r) => {
            const [lo, hi] = r.split('-').map(Number);
            return [lo, hi ?? lo] as const;
          }),
      };
    });
}

const owns = (node: ClusterNode, slot: number) => node.slots.some(([lo, hi]) => slot >= lo && slot <= hi);

async function serverTimeMs(client: Cluster): Promise<number> {
  const [seconds, micros] = await client.time();
  return Number(seconds) * 1000 + Number(micros) / 1000;
}

/** Units and time of a bucket (present: the test's own first call left it short of full). */
async function bucket(client: Cluster, store: RedisStore, key: string): Promise<[number, number]> {
  const b = await readBucket(client, store.keyOf(policy, key), policy);
  return b === undefined ? [Number.NaN, Number.NaN] : [b.units, b.last];
}

let cluster: RedisCluster;
let client: Cluster;
beforeAll(async () => {
  cluster = await startRedisCluster({ replicasPerMaster: 1 });
  client = new Cluster([...cluster.startupNodes]);
  client.on('error', () => {});
  await new Promise((resolve) => client.once('ready', resolve));
});
afterAll(async () => {
  await client?.quit();
  await cluster?.stop();
});

// Figures rounded to 1/100 of a token for the table, in the direction that keeps the comparison with a whole
// number of admitted calls exact: an upper bound down, a lower bound up.
const down = (n: number) => Math.floor(n * 100 + 1e-6) / 100;
const up = (n: number) => Math.ceil(n * 100 - 1e-6) / 100;

interface Tally {
  admitted: number;
  decisions: number;
  refused: number;
  timedOut: number;
  firstRefusedAt?: number;
  lastRefusedAt?: number;
}

/** What one worker process prints at the end (test/support/redis-hammer-worker.ts). */
interface Result {
  readonly keys: Record<string, Tally>;
  readonly startedAt: number;
  readonly endedAt: number;
  readonly endServerMs: number;
}

describe('RedisStore accuracy on a Redis Cluster through a master failover', () => {
  it('four processes on shared keys admit burst + rate x elapsed, never more, at most the failover window less', async () => {
    const store = new RedisStore({ client, timeoutMs: 5_000, failureMode: 'closed' });
    const before = await clusterNodes(cluster.nodes[0].port);
    const masters = before.filter((n) => n.master && n.slots.length > 0);
    expect(masters).toHaveLength(3);

    // KEYS_PER_MASTER keys on every master, so that the failover hits some keys and spares others.
    const run = Date.now().toString(36);
    const keysOf = new Map<string, string[]>(masters.map((m) => [m.id, []]));
    for (let i = 0; [...keysOf.values()].some((k) => k.length < KEYS_PER_MASTER); i++) {
      if (i >= 1_000) throw new Error('no spread of keys over the masters in 1000 tries');
      const key = `acc-${run}-${i}`;
      const slot = clusterSlot(store.keyOf(policy, key));
      const owner = masters.find((m) => owns(m, slot))!;
      const keys = keysOf.get(owner.id)!;
      if (keys.length < KEYS_PER_MASTER) keys.push(key);
    }
    const keys = [...keysOf.values()].flat();
    const target = masters[0];
    const replica = before.find((n) => n.masterId === target.id);
    if (replica === undefined) throw new Error(`no replica of the master on ${target.port}`);
    const moved = new Set(keysOf.get(target.id));

    const hammers = spawnHammers(PROCESSES, [
      cluster.startupNodes.map((n) => n.port).join(','),
      keys.join(','),
      String(DURATION_MS),
      String(CONCURRENCY),
      String(QUOTA),
      String(WINDOW),
      String(BURST),
      JSON.stringify({ timeoutMs: TIMEOUT_MS, probeIntervalMs: PROBE_MS, announceHalf: true }),
    ]);
    try {
      for (const h of hammers) expect(await h.next()).toBe('ready');
      const t0 = await serverTimeMs(client);
      // The test takes every key's first token itself, so each bucket's first write is known from Redis.
      for (const d of await Promise.all(keys.map((key) => store.decide([{ policy, key }], 1)))) {
        expect(d.allowed).toBe(true);
      }
      const first = new Map(
        await Promise.all(keys.map(async (k) => [k, (await bucket(client, store, k))[1]] as const)),
      );
      for (const h of hammers) h.go();

      // In the middle of the run: the replica takes over, then CLUSTER NODES is polled (bounded) until both the
      // replica and the old master name the replica the master of the target's slots (the old master then answers
      // MOVED, which is how clients learn of the change).
      expect(await hammers[0].next()).toBe('half');
      const failoverStart = Date.now();
      expect(await redisCli(replica.port, 'CLUSTER', 'FAILOVER')).toBe('OK');
      const deadline = failoverStart + 10_000;
      for (;;) {
        const views = await Promise.all([replica.port, target.port].map((p) => clusterNodes(p)));
        const promoted = views.every((view) => {
          const r = view.find((n) => n.id === replica.id);
          const t = view.find((n) => n.id === target.id);
          return r?.master === true && owns(r, target.slots[0][0]) && t?.master === false;
        });
        if (promoted) break;
        if (Date.now() > deadline) throw new Error('the failover did not complete within 10 s');
      }
      const failoverEnd = Date.now();
      for (const h of hammers.slice(1)) expect(await h.next()).toBe('half');

      const results: Result[] = [];
      for (const h of hammers) results.push(JSON.parse(await h.next()));
      const t1 = Math.max(...results.map((r) => r.endServerMs));
      const elapsedS = (t1 - t0) / 1000;
      // No process was deciding yet, or any more: the go message reaching the processes, the last TIME read.
      const idleMs =
        Math.max(0, Math.min(...results.map((r) => r.startedAt)) - t0) +
        Math.max(0, t1 - Math.max(...results.map((r) => r.endedAt)));

      const rows = [];
      for (const key of keys) {
        const tallies = results.map((r) => r.keys[key]);
        const sum = (f: (t: Tally) => number) => tallies.reduce((s, t) => s + f(t), 0);
        const at = (f: (t: Tally) => number | undefined) => tallies.flatMap((t) => f(t) ?? []);
        const windowMs =
          Math.max(failoverEnd, ...at((t) => t.lastRefusedAt)) -
          Math.min(failoverStart, ...at((t) => t.firstRefusedAt));
        const timedOut = sum((t) => t.timedOut);
        const [units, last] = await bucket(client, store, key);
        const bound = BURST + RATE * elapsedS;
        const tolerance = 1 + (RATE * (windowMs + idleMs)) / 1000 + timedOut;
        rows.push({
          key,
          failedOver: moved.has(key),
          admitted: 1 + sum((t) => t.admitted),
          bound: down(bound),
          serverBound: down(BURST + (RATE * (last - first.get(key)!)) / 1000),
          lowerBound: up(bound - tolerance),
          decisions: 1 + sum((t) => t.decisions),
          refused: sum((t) => t.refused),
          timedOut,
          windowMs: Math.round(windowMs),
          leftInBucket: down(units / (WINDOW * 1000)),
        });
      }
      console.log(
        `Cluster failover ${failoverEnd - failoverStart} ms (CLUSTER FAILOVER to both nodes agreeing); ` +
          `elapsed ${Math.round(t1 - t0)} ms (server time), of which ${Math.round(idleMs)} ms idle edges`,
      );
      console.table(rows);
      for (const row of rows) {
        expect(row.admitted, row.key).toBeLessThanOrEqual(row.bound);
        // A missing bucket (NaN) fails here: the hammering never leaves a key untouched long enough to refill.
        expect(row.admitted, row.key).toBeLessThanOrEqual(row.serverBound);
        expect(row.admitted, row.key).toBeGreaterThanOrEqual(row.lowerBound);
        expect(row.decisions, row.key).toBeGreaterThan(row.admitted);
      }
      // The keys of the failed-over master were decided by its replica afterwards, and every key kept deciding.
      expect(await cluster.portForKey(store.keyOf(policy, [...moved][0]))).toBe(replica.port);
    } finally {
      for (const h of hammers) h.kill();
    }
  }, 60_000);
});
