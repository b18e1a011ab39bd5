import type { IncomingMessage } from 'node:http';
import { PassThrough } from 'node:stream';
import { ManualClock } from 'sluice';
import { describe, expect, it } from 'vitest';
import type { DeadlineTimer } from '../proxy/body-deadline.js';
import { paceLeftover } from './pace-leftover.js';

/** A DeadlineTimer on a ManualClock: timers fire (a microtask later) as the test advances the clock. */
function fakeTimer(clock: ManualClock): DeadlineTimer {
  return {
    now: () => clock.now(),
    start(fire, ms) {
      const stop = new AbortController();
      clock.sleep(ms, stop.signal).then(fire, () => undefined);
      return stop;
    },
    cancel: (handle) => (handle as AbortController).abort(),
  };
}

async function advance(clock: ManualClock, ms: number): Promise<void> {
  clock.advance(ms);
  for (let i = 0; i < 3; i++) await Promise.resolve();
}

/** A request body stream with a socket that records being destroyed. */
function leftover() {
  const socket = {
    destroyed: false,
    destroy() {
      this.destroyed = true;
    },
  };
  const req = Object.assign(new PassThrough(), { socket }) as unknown as IncomingMessage & PassThrough;
  return { req, socket };
}

const PACE = { bodyTimeoutMs: 20_000, bodyMinRate: 500 };

describe('paceLeftover', () => {
  it('closes the connection of a leftover body trickled below the rate', async () => {
    const clock = new ManualClock(0);
    const { req, socket } = leftover();
    paceLeftover(req, PACE, fakeTimer(clock));
    for (let t = 0; t < 20_000; t += 5000) {
      req.write('x');
      await advance(clock, 5000);
    }
    // 20 s of grace and 4 bytes earn 8 ms more: the next check finds the deadline passed.
    await advance(clock, 10);
    expect(socket.destroyed).toBe(true);
  });

  it('lets a leftover that keeps the pace, or ends, go on', async () => {
    const clock = new ManualClock(0);
    const { req, socket } = leftover();
    paceLeftover(req, PACE, fakeTimer(clock));
    for (let i = 0; i < 60; i++) {
      req.write(Buffer.alloc(1000));
      await advance(clock, 1000);
    }
    expect(socket.destroyed).toBe(false);
    req.end();
    await new Promise((r) => setImmediate(r));
    await advance(clock, 3_600_000);
    expect(socket.destroyed).toBe(false);
  });

  it('does nothing when the rule is off', async () => {
    const clock = new ManualClock(0);
    const { req, socket } = leftover();
    paceLeftover(req, { bodyTimeoutMs: 0, bodyMinRate: 500 }, fakeTimer(clock));
    await advance(clock, 3_600_000);
    expect(socket.destroyed).toBe(false);
  });
});
