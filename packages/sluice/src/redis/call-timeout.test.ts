import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { CallTimeouts, type TrackedCall } from './call-timeout.js';

beforeEach(() => {
  vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'performance'] });
});
afterEach(() => {
  vi.useRealTimers();
});

describe('CallTimeouts', () => {
  it('expires only the calls in flight longer than the timeout, oldest first, each once', () => {
    const expired: string[] = [];
    const t = new CallTimeouts<string>(100, (call) => expired.push(call.payload));
    const a = t.start('a');
    vi.advanceTimersByTime(40);
    const b = t.start('b');
    const c = t.start('c');
    expect(t.finish(b)).toBe(true);
    vi.advanceTimersByTime(60); // a has had 100 ms
    expect(expired).toEqual(['a']);
    expect(t.finish(a)).toBe(false); // its late answer is ignored
    vi.advanceTimersByTime(39);
    expect(expired).toEqual(['a']);
    vi.advanceTimersByTime(1); // c has had 100 ms; b settled in time
    expect(expired).toEqual(['a', 'c']);
    expect(t.finish(c)).toBe(false);
    expect(t.size).toBe(0);
  });

  it('uses one timer for any number of calls in flight, and none once they all settled', () => {
    const t = new CallTimeouts<number>(50, () => {});
    const calls: TrackedCall<number>[] = [];
    for (let i = 0; i < 1000; i++) calls.push(t.start(i));
    expect(vi.getTimerCount()).toBe(1);
    for (const call of calls) expect(t.finish(call)).toBe(true);
    expect(t.size).toBe(0);
    vi.advanceTimersByTime(50); // the timer fires, finds nothing in flight and is not armed again
    expect(vi.getTimerCount()).toBe(0);
  });

  it('keeps its list short when calls settle in order, and when the oldest one is still in flight', () => {
    const t = new CallTimeouts<number>(1_000, () => {});
    const oldest = t.start(-1);
    for (let i = 0; i < 5_000; i++) expect(t.finish(t.start(i))).toBe(true);
    expect(t.size).toBe(1);
    expect(t.finish(oldest)).toBe(true);
    expect(t.size).toBe(0);
  });

  it('waits the rest when its timer fires before the oldest call has had the whole timeout', () => {
    const expired: number[] = [];
    const t = new CallTimeouts<number>(100, (call) => expired.push(call.payload));
    t.start(1);
    vi.advanceTimersByTime(60);
    t.start(2); // the timer was armed for call 1; call 2 needs another 60 ms after it fires
    vi.advanceTimersByTime(40);
    expect(expired).toEqual([1]);
    vi.advanceTimersByTime(59);
    expect(expired).toEqual([1]);
    vi.advanceTimersByTime(1);
    expect(expired).toEqual([1, 2]);
  });
});
