import { ManualClock } from 'sluice';
import { describe, expect, it } from 'vitest';
import { BodyDeadline, BodyTimeoutError, type DeadlineTimer } from './body-deadline.js';

/** A {@link DeadlineTimer} on a ManualClock: timers fire (a microtask later) as the test advances the clock. */
function fakeTimer(clock: ManualClock): DeadlineTimer & { readonly armed: number } {
  let armed = 0;
  return {
    get armed() {
      return armed;
    },
    now: () => clock.now(),
    start(fire, ms) {
      armed++;
      const stop = new AbortController();
      clock.sleep(ms, stop.signal).then(
        () => {
          armed--;
          fire();
        },
        () => {
          armed--;
        },
      );
      return stop;
    },
    cancel(handle) {
      (handle as AbortController).abort();
    },
  };
}

/** Advances the clock and lets the timers that came due run. */
async function advance(clock: ManualClock, ms: number): Promise<void> {
  clock.advance(ms);
  for (let i = 0; i < 3; i++) await Promise.resolve();
}

function setUp(timeoutMs: number, minRate: number) {
  const clock = new ManualClock(10_000);
  const timer = fakeTimer(clock);
  const expired: BodyTimeoutError[] = [];
  const deadline = new BodyDeadline(
    { bodyTimeoutMs: timeoutMs, bodyMinRate: minRate },
    (e) => expired.push(e),
    timer,
  );
  return { clock, timer, expired, deadline };
}

describe('BodyDeadline', () => {
  it('cuts a body that sends nothing once bodyTimeout has passed', async () => {
    const { clock, expired } = setUp(20_000, 500);
    await advance(clock, 19_999);
    expect(expired).toEqual([]);
    await advance(clock, 1);
    expect(expired).toHaveLength(1);
    expect(expired[0]).toBeInstanceOf(BodyTimeoutError);
    expect(expired[0]?.received).toBe(0);
  });

  it('extends the deadline by one second per minRate bytes received', async () => {
    const { clock, expired, deadline } = setUp(20_000, 500);
    await advance(clock, 5_000);
    deadline.received(1_000); // 2 s more: the deadline is now 22 s after the start
    await advance(clock, 16_999);
    expect(expired).toEqual([]);
    await advance(clock, 1);
    expect(expired).toHaveLength(1);
    expect(expired[0]?.received).toBe(1_000);
  });

  it('lets a slow but steady body above the rate run past bodyTimeout', async () => {
    const { clock, expired, deadline, timer } = setUp(20_000, 500);
    // 1,000 bytes a second, twice the minimum, for two minutes.
    for (let s = 0; s < 120; s++) {
      await advance(clock, 1_000);
      deadline.received(1_000);
    }
    expect(expired).toEqual([]);
    deadline.finish();
    await advance(clock, 1_000_000);
    expect(expired).toEqual([]);
    expect(timer.armed).toBe(0);
  });

  it('cuts the slow POST: one byte every 5 s', async () => {
    const { clock, expired, deadline } = setUp(20_000, 500);
    let t = 0;
    while (expired.length === 0 && t < 60_000) {
      deadline.received(1);
      await advance(clock, 5_000);
      t += 5_000;
    }
    // The deadline is 20 s plus 2 ms per byte: the fifth tick (25 s) is past it.
    expect(expired).toHaveLength(1);
    expect(t).toBe(25_000);
  });

  it('keeps one timer however many chunks arrive', async () => {
    const { clock, timer, deadline } = setUp(20_000, 500);
    for (let i = 0; i < 1_000; i++) deadline.received(10);
    expect(timer.armed).toBe(1);
    await advance(clock, 20_000); // fires, finds the deadline moved by 20 s, arms once more
    expect(timer.armed).toBe(1);
  });

  it('with minRate 0 wants the whole body within bodyTimeout', async () => {
    const { clock, expired, deadline } = setUp(1_000, 0);
    deadline.received(1_000_000);
    await advance(clock, 999);
    expect(expired).toEqual([]);
    await advance(clock, 1);
    expect(expired).toHaveLength(1);
  });

  it('does not count the time the gateway holds the body back', async () => {
    const { clock, expired, deadline } = setUp(1_000, 1_000);
    await advance(clock, 500);
    deadline.hold(); // the upstream is not reading: neither is the gateway
    await advance(clock, 10_000);
    expect(expired).toEqual([]);
    deadline.release();
    await advance(clock, 499);
    expect(expired).toEqual([]);
    await advance(clock, 1);
    expect(expired).toHaveLength(1);
  });

  it('never fires after finish, and expires once', async () => {
    const a = setUp(1_000, 500);
    a.deadline.finish();
    await advance(a.clock, 5_000);
    expect(a.expired).toEqual([]);
    const b = setUp(1_000, 500);
    await advance(b.clock, 1_000);
    b.deadline.received(100_000);
    b.deadline.release();
    await advance(b.clock, 1_000_000);
    expect(b.expired).toHaveLength(1);
    expect(b.timer.armed).toBe(0);
  });
});
