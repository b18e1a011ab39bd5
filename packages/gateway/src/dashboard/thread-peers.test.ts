import { ManualClock } from 'sluice';
import { describe, expect, it } from 'vitest';
import { RateWindow } from './rate-window.js';
import { type LimitedKeyRow, ThreadPeers } from './thread-peers.js';

const row = (hash: string, policy: string, count: number, error = 0): LimitedKeyRow => ({
  hash,
  policy,
  count,
  error,
});

describe('ThreadPeers', () => {
  it("adds the other threads' latest top keys and requests in flight to the first thread's", () => {
    const clock = new ManualClock(0);
    const rates = new RateWindow({ clock, wallNow: () => clock.now() });
    const peers = new ThreadPeers(rates);
    const own = {
      top: () => [row('aa', 'minute', 4), row('bb', 'hour', 1)],
      hashKey: (k: string) => `h(${k})`,
    };
    const empty = { series: [], rows: [] };
    peers.receive(1, { rates: empty, top: [row('bb', 'rule', 6, 1), row('cc', 'minute', 2)], inflight: 3 });
    peers.receive(2, { rates: empty, top: [row('aa', 'minute', 1)], inflight: 1 });
    // A newer feed replaces the thread's previous one: counts are the thread's totals, not increments.
    peers.receive(2, { rates: empty, top: [row('aa', 'minute', 2)], inflight: 2 });
    expect(peers.topKeys(own).top(2)).toEqual([row('bb', 'rule', 7, 1), row('aa', 'minute', 6)]);
    expect(
      peers
        .topKeys(own)
        .top(10)
        .map((r) => r.hash),
    ).toEqual(['bb', 'aa', 'cc']);
    expect(peers.inflight).toBe(5);
    expect(peers.topKeys(own).hashKey('ip:192.0.2.1')).toBe('h(ip:192.0.2.1)');
  });

  it("adds the other threads' requests in flight per concurrency policy and their units charged", () => {
    const clock = new ManualClock(0);
    const peers = new ThreadPeers(new RateWindow({ clock, wallNow: () => clock.now() }));
    const empty = { series: [], rows: [] };
    expect(peers.inFlightOf('reports')).toBe(0);
    peers.receive(1, {
      rates: empty,
      top: [],
      inflight: 3,
      concurrency: [{ policy: 'reports', inFlight: 2, limit: 4 }],
      units: [
        { policy: 'tokens', unit: 'tokens', units: 30 },
        { policy: 'login', unit: 'requests', units: 1 },
      ],
    });
    peers.receive(2, {
      rates: empty,
      top: [],
      inflight: 1,
      concurrency: [{ policy: 'reports', inFlight: 1, limit: 4 }],
      units: [{ policy: 'tokens', unit: 'tokens', units: 5 }],
    });
    // A newer feed replaces the thread's previous one: in flight now, units charged since start.
    peers.receive(2, {
      rates: empty,
      top: [],
      inflight: 1,
      concurrency: [{ policy: 'reports', inFlight: 3, limit: 4 }],
      units: [{ policy: 'tokens', unit: 'tokens', units: 8 }],
    });
    expect(peers.inFlightOf('reports')).toBe(5);
    expect(peers.inFlightOf('other')).toBe(0);
    const own = [
      { policy: 'login', unit: 'requests', units: 2 },
      { policy: 'bytes', unit: 'bytes', units: 4 },
    ];
    expect(peers.units(own)).toEqual([
      { policy: 'tokens', unit: 'tokens', units: 38 },
      { policy: 'bytes', unit: 'bytes', units: 4 },
      { policy: 'login', unit: 'requests', units: 3 },
    ]);
  });

  it("merges the other threads' seconds into the first thread's rate window", () => {
    const clock = new ManualClock(5_000);
    const opts = { clock, wallNow: () => clock.now() };
    const first = new RateWindow(opts);
    const second = new RateWindow(opts);
    const peers = new ThreadPeers(first);
    first.recordExempt({ reason: 'tier', tier: 't' });
    second.recordExempt({ reason: 'tier', tier: 't' });
    second.recordExempt({ reason: 'tier', tier: 't' });
    clock.advance(1000);
    peers.receive(1, { rates: second.ship(), top: [], inflight: 0 });
    const exempt = first.series().find((s) => s.kind === 'exempt')?.id as number;
    expect(first.rowsAfter(-Infinity)).toEqual([{ t: 5, v: { 0: [0, 0, 3], [exempt]: [3, 0, 0] } }]);
  });
});
