import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { definePolicy } from '../core/index.js';
import { BatchQueue, type Entry } from './batch-queue.js';

beforeEach(() => {
  vi.useFakeTimers({ toFake: ['performance'] });
});
afterEach(() => {
  vi.useRealTimers();
});

const policy = definePolicy({ name: 'rl.q', quota: 10, window: 60, burst: 5 });

function entry(key: string): Entry {
  return {
    op: 'd',
    mode: 'decide',
    checks: [{ policy, key }],
    keys: [key],
    cost: 1,
    now: '',
    local: 0,
    denyEpoch: 0,
    slot: 0,
    queuedAt: performance.now(),
    resolve: () => {},
    reject: () => {},
  };
}

/** A queue with one call in flight at a time, recording what it sends and what it expires. */
function oneAtATime() {
  const sent: string[][] = [];
  const expired: string[] = [];
  const queue = new BatchQueue({
    maxEntries: 10,
    maxInFlight: 1,
    timeoutMs: 100,
    cluster: false,
    send: (entries) => sent.push(entries.map((e) => e.keys[0])),
    expire: (e) => expired.push(e.keys[0]),
  });
  return { queue, sent, expired };
}

const tick = () => new Promise<void>((r) => queueMicrotask(r));

describe('BatchQueue', () => {
  it('sends the calls that waited behind an answered call, however long this thread took to read it', async () => {
    const { queue, sent, expired } = oneAtATime();
    void queue.push(entry('a'));
    await tick();
    void queue.push(entry('b'));
    void queue.push(entry('c'));
    await tick();
    expect(sent).toEqual([['a']]);
    // The answer to `a` is read 250 ms later: the event loop was busy, Redis was not (it answered).
    vi.advanceTimersByTime(250);
    queue.done();
    await tick();
    expect(expired).toEqual([]);
    expect(sent).toEqual([['a'], ['b', 'c']]);
  });

  it('gives up the calls that waited a whole timeout behind a call that failed or timed out', async () => {
    const { queue, sent, expired } = oneAtATime();
    void queue.push(entry('a'));
    await tick();
    void queue.push(entry('b'));
    vi.advanceTimersByTime(50);
    void queue.push(entry('c'));
    vi.advanceTimersByTime(60);
    queue.done(true);
    await tick();
    // b waited 110 ms behind a failing Redis and follows the failure mode; c, 60 ms, gets its turn.
    expect(expired).toEqual(['b']);
    expect(sent).toEqual([['a'], ['c']]);
  });
});
