import { describe, expect, it } from 'vitest';
import type { DeadlineTimer } from './body-deadline.js';
import { ClientBodies } from './client-bodies.js';
import { ConnectionGate } from './connection-gate.js';

/** A timer on a hand-moved clock, and a deferral run by hand: the gate's waits without wall time. */
function fakes() {
  let now = 0;
  const timers = new Map<number, { at: number; fire: () => void }>();
  let next = 0;
  const deferred: (() => void)[] = [];
  const timer: DeadlineTimer = {
    now: () => now,
    start: (fire, ms) => {
      timers.set(++next, { at: now + ms, fire });
      return next;
    },
    cancel: (h) => void timers.delete(h as number),
  };
  return {
    timers,
    gate: (slots: number) => new ConnectionGate(slots, { timer, defer: (run) => void deferred.push(run) }),
    advance(ms: number) {
      now += ms;
      for (const [h, t] of [...timers]) {
        if (t.at <= now) {
          timers.delete(h);
          t.fire();
        }
      }
    },
    runDeferred() {
      for (const run of deferred.splice(0)) run();
    },
  };
}

describe('ConnectionGate', () => {
  it('lets requests through while places are free, then makes them wait', () => {
    const f = fakes();
    const gate = f.gate(2);
    expect(gate.tryEnter()).toBe(true);
    expect(gate.tryEnter()).toBe(true);
    expect(gate.tryEnter()).toBe(false);
    expect(gate.busy).toBe(2);
  });

  it('hands a freed place to the first waiter, a turn later, and cancels its timer', () => {
    const f = fakes();
    const gate = f.gate(1);
    gate.tryEnter();
    const got: string[] = [];
    gate.wait(
      100,
      () => got.push('a'),
      () => got.push('a expired'),
    );
    gate.wait(
      100,
      () => got.push('b'),
      () => got.push('b expired'),
    );
    gate.leave();
    expect(got).toEqual([]);
    // A newcomer does not pass the line while the hand-off is pending.
    expect(gate.tryEnter()).toBe(false);
    f.runDeferred();
    expect(got).toEqual(['a']);
    expect(gate.busy).toBe(1);
    expect(gate.waiting).toBe(1);
    expect(f.timers.size).toBe(1);
    f.advance(100);
    expect(got).toEqual(['a', 'b expired']);
    expect(gate.waiting).toBe(0);
  });

  it('expires a wait at its timeout and never grants it afterwards', () => {
    const f = fakes();
    const gate = f.gate(1);
    gate.tryEnter();
    const got: string[] = [];
    gate.wait(
      50,
      () => got.push('granted'),
      () => got.push('expired'),
    );
    f.advance(49);
    expect(got).toEqual([]);
    f.advance(1);
    expect(got).toEqual(['expired']);
    gate.leave();
    f.runDeferred();
    expect(got).toEqual(['expired']);
    expect(gate.busy).toBe(0);
    expect(gate.tryEnter()).toBe(true);
  });

  it('forgets a cancelled waiter: no grant, no expiry, no timer left, the place goes to the next', () => {
    const f = fakes();
    const gate = f.gate(1);
    gate.tryEnter();
    const got: string[] = [];
    const gone = gate.wait(
      50,
      () => got.push('gone granted'),
      () => got.push('gone expired'),
    );
    gate.wait(
      0,
      () => got.push('next'),
      () => got.push('next expired'),
    );
    gone.cancel();
    expect(f.timers.size).toBe(0);
    f.advance(1000);
    gate.leave();
    f.runDeferred();
    expect(got).toEqual(['next']);
  });

  it('tells a closing pool when nobody waits any more (granted, expired or gone)', async () => {
    const f = fakes();
    const gate = f.gate(1);
    await gate.noneWaiting();
    gate.tryEnter();
    const noop = () => undefined;
    gate.wait(0, noop, noop);
    gate.wait(10, noop, noop);
    const gone = gate.wait(0, noop, noop);
    let empty = false;
    void gate.noneWaiting().then(() => {
      empty = true;
    });
    gone.cancel();
    f.advance(10);
    await Promise.resolve();
    expect(empty).toBe(false);
    gate.leave();
    f.runDeferred();
    await Promise.resolve();
    expect(empty).toBe(true);
  });

  it('waits without bound with a timeout of 0', () => {
    const f = fakes();
    const gate = f.gate(1);
    gate.tryEnter();
    const got: string[] = [];
    gate.wait(
      0,
      () => got.push('granted'),
      () => got.push('expired'),
    );
    expect(f.timers.size).toBe(0);
    f.advance(10 ** 9);
    gate.leave();
    f.runDeferred();
    expect(got).toEqual(['granted']);
  });
});

describe('ConnectionGate with a share for bodies', () => {
  it('keeps the places beyond the bodies share for requests without a body', () => {
    const f = fakes();
    const gate = f.gate(4);
    // Two of four places for bodies: the third body waits, a request without a body still enters.
    expect(gate.tryEnter(2)).toBe(true);
    expect(gate.tryEnter(2)).toBe(true);
    expect(gate.tryEnter(2)).toBe(false);
    expect(gate.tryEnter()).toBe(true);
    expect(gate.bodies).toBe(2);
    expect(gate.busy).toBe(3);
  });

  it('lets a request without a body pass bodies waiting for the share, never a waiter it could serve', () => {
    const f = fakes();
    const gate = f.gate(3);
    gate.tryEnter(1);
    const got: string[] = [];
    gate.wait(
      100,
      () => got.push('body'),
      () => got.push('body expired'),
      1,
    );
    // The waiting body cannot have the free places: a request without a body takes one at once.
    expect(gate.tryEnter()).toBe(true);
    expect(gate.waiting).toBe(1);
    // Once the first body has arrived whole its share place is free, and the waiter comes first.
    gate.bodyArrived();
    expect(gate.tryEnter(1)).toBe(false);
    expect(gate.tryEnter()).toBe(false);
    f.runDeferred();
    expect(got).toEqual(['body']);
    expect(gate.bodies).toBe(1);
    expect(f.timers.size).toBe(0);
  });

  it('serves waiters in arrival order, skipping bodies while the share is full', () => {
    const f = fakes();
    const gate = f.gate(2);
    gate.tryEnter(1);
    gate.tryEnter();
    const got: string[] = [];
    gate.wait(
      0,
      () => got.push('body'),
      () => undefined,
      1,
    );
    gate.wait(
      0,
      () => got.push('plain'),
      () => undefined,
    );
    // The request without a body leaves: its place goes to the later plain waiter, the body still has no share.
    gate.leave();
    f.runDeferred();
    expect(got).toEqual(['plain']);
    // The body leaves with its exchange: its place and share go to the waiting body.
    gate.leave(true);
    f.runDeferred();
    expect(got).toEqual(['plain', 'body']);
    expect(gate.bodies).toBe(1);
    expect(gate.waiting).toBe(0);
  });

  it('lets bodies take every place with a share of 0, and expires a body waiting for the share', () => {
    const f = fakes();
    const open = f.gate(2);
    expect(open.tryEnter(0)).toBe(true);
    expect(open.tryEnter(0)).toBe(true);
    const gate = f.gate(2);
    gate.tryEnter(1);
    const got: string[] = [];
    gate.wait(
      100,
      () => got.push('granted'),
      () => got.push('expired'),
      1,
    );
    f.advance(100);
    expect(got).toEqual(['expired']);
    expect(gate.waiting).toBe(0);
  });
});

describe('ClientBodies', () => {
  it('counts bodies per client up to the cap and forgets a client with none left', () => {
    const b = new ClientBodies();
    expect(b.take('ip:192.0.2.1', 2)).toBe(true);
    expect(b.take('ip:192.0.2.1', 2)).toBe(true);
    expect(b.take('ip:192.0.2.1', 2)).toBe(false);
    expect(b.take('ip:192.0.2.2', 2)).toBe(true);
    b.give('ip:192.0.2.1');
    expect(b.take('ip:192.0.2.1', 2)).toBe(true);
    b.give('ip:192.0.2.1');
    b.give('ip:192.0.2.1');
    b.give('ip:192.0.2.2');
    expect(b.clients).toBe(0);
    // A give without a take is ignored rather than counted below zero.
    b.give('ip:192.0.2.3');
    expect(b.clients).toBe(0);
  });
});
