import { describe, expect, it } from 'vitest';
import { ManualClock, monotonicClock } from './index.js';

describe('clocks', () => {
  it('ManualClock resolves sleeps in deadline order as time advances', async () => {
    const clock = new ManualClock(100);
    const order: number[] = [];
    const a = clock.sleep(50).then(() => order.push(50));
    const b = clock.sleep(10).then(() => order.push(10));
    expect(clock.pendingSleeps).toBe(2);
    clock.advance(9);
    await Promise.resolve();
    expect(order).toEqual([]);
    clock.advance(1); // 110: the 10 ms sleep is due
    await b;
    expect(order).toEqual([10]);
    clock.advance(40);
    await Promise.all([a, b]);
    expect(order).toEqual([10, 50]);
    expect(clock.now()).toBe(150);
    await clock.sleep(0);
  });

  it('ManualClock rejects an aborted sleep with the signal reason and forgets it', async () => {
    const clock = new ManualClock();
    const ac = new AbortController();
    const p = clock.sleep(1000, ac.signal);
    ac.abort(new Error('stop'));
    await expect(p).rejects.toThrow('stop');
    expect(clock.pendingSleeps).toBe(0);
    await expect(clock.sleep(5, ac.signal)).rejects.toThrow('stop');
  });

  it('the monotonic clock never goes back and honours abort', async () => {
    const a = monotonicClock.now();
    expect(monotonicClock.now()).toBeGreaterThanOrEqual(a);
    await monotonicClock.sleep(0);
    const ac = new AbortController();
    const p = monotonicClock.sleep(60_000, ac.signal);
    ac.abort(new Error('cancelled'));
    await expect(p).rejects.toThrow('cancelled');
    await expect(monotonicClock.sleep(1, ac.signal)).rejects.toThrow('cancelled');
  });
});
