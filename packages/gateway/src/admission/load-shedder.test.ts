import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { Priority } from '../config/resolve-overload.js';
import { AdaptiveLimit } from './adaptive-limit.js';
import { LoadShedder } from './load-shedder.js';

const fixed = (maxInFlight: number, reserve = 0.2) =>
  new LoadShedder({ maxInFlight, adaptive: undefined, reserve });

describe('LoadShedder', () => {
  it('sheds sheddable first, then normal, and critical only beyond the whole limit', () => {
    const s = fixed(10, 0.2);
    const admitted = (p: Priority) => {
      let n = 0;
      while (s.tryEnter(p) > 0) n++;
      return n;
    };
    // sheddable: 10 x 0.8 x 0.8 = 6.4, normal: 8, critical: 10.
    expect(admitted('sheddable')).toBe(7);
    expect(admitted('normal')).toBe(1);
    expect(admitted('critical')).toBe(2);
    expect(s.inFlight).toBe(10);
    expect(s.shed).toEqual([1, 1, 1]);
    s.release(5, true, 10);
    expect(s.tryEnter('normal')).toBe(0);
    expect(s.tryEnter('critical')).toBe(10);
  });

  it('never counts more in flight than the limit, nor fewer than none, under any interleaving', () => {
    const op = fc.oneof(
      fc.record({ enter: fc.constantFrom<Priority>('critical', 'normal', 'sheddable') }),
      fc.record({ release: fc.nat() }),
      fc.record({ limit: fc.integer({ min: 1, max: 20 }) }),
    );
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 20 }), fc.array(op, { maxLength: 200 }), (first, ops) => {
        const s = fixed(first);
        let limit = first;
        const held: number[] = [];
        for (const o of ops) {
          if ('enter' in o) {
            const at = s.tryEnter(o.enter);
            if (at > 0) held.push(at);
          } else if ('release' in o) {
            if (held.length === 0) continue;
            s.release(1, true, held.splice(o.release % held.length, 1)[0]);
          } else {
            limit = o.limit;
            s.configure({ maxInFlight: limit, adaptive: undefined, reserve: 0.2 });
          }
          expect(s.inFlight).toBe(held.length);
          // A lower limit after a reload admits nothing more until enough have ended; none is forgotten.
          expect(s.inFlight).toBeGreaterThanOrEqual(0);
        }
        for (const at of held.splice(0)) s.release(1, false, at);
        expect(s.inFlight).toBe(0);
        expect(s.tryEnter('critical')).toBe(1);
        expect(limit).toBeGreaterThanOrEqual(1);
      }),
    );
  });

  it('admits no request beyond the limit at the moment it enters', () => {
    fc.assert(
      fc.property(
        fc.array(fc.constantFrom<Priority>('critical', 'normal', 'sheddable'), { maxLength: 60 }),
        (ps) => {
          const s = fixed(7, 0.3);
          for (const p of ps) {
            const at = s.tryEnter(p);
            if (at > 0) expect(at).toBeLessThanOrEqual(Math.ceil(s.capacityOf(p)));
          }
          expect(s.inFlight).toBeLessThanOrEqual(7);
        },
      ),
    );
  });

  it('warns at most once a second while shedding, with the count since the last warning', () => {
    const s = fixed(1);
    s.tryEnter('normal');
    expect(s.warnDue(0)).toBe(0);
    for (let i = 0; i < 5; i++) s.tryEnter('normal');
    expect(s.warnDue(1000)).toBe(5);
    s.tryEnter('normal');
    expect(s.warnDue(1500)).toBe(0);
    expect(s.warnDue(2000)).toBe(1);
    expect(s.warnDue(5000)).toBe(0);
  });
});

/** A binary heap of timed events, for the simulation below. */
class Events<T extends { t: number }> {
  readonly #a: T[] = [];
  push(x: T): void {
    const a = this.#a;
    a.push(x);
    let i = a.length - 1;
    while (i > 0) {
      const p = (i - 1) >> 1;
      if (a[p].t <= a[i].t) break;
      [a[p], a[i]] = [a[i], a[p]];
      i = p;
    }
  }
  pop(): T {
    const a = this.#a;
    const top = a[0];
    const last = a.pop() as T;
    if (a.length > 0) {
      a[0] = last;
      let i = 0;
      for (;;) {
        const l = 2 * i + 1;
        let m = i;
        if (l < a.length && a[l].t < a[m].t) m = l;
        if (l + 1 < a.length && a[l + 1].t < a[m].t) m = l + 1;
        if (m === i) break;
        [a[m], a[i]] = [a[i], a[m]];
        i = m;
      }
    }
    return top;
  }
}

/**
 * Simulated time (no clock, no sleep): 3 x `capacity` clients in a closed loop against an upstream that answers in
 * 100 ms up to `capacity` requests at once and proportionally slower beyond (latency = 100 ms x in flight /
 * capacity); a shed client tries again 20 ms later. Returns the median limit over the second minute.
 */
function settledLimit(capacity: number): number {
  const a = new AdaptiveLimit({ min: 5, max: 2000, initial: 20, smoothing: 0.2, tolerance: 1.1 });
  type Ev = { t: number; end: boolean; start: number; at: number };
  const events = new Events<Ev>();
  for (let i = 0; i < 3 * capacity; i++) events.push({ t: i * 0.1, end: false, start: 0, at: 0 });
  let inFlight = 0;
  let next = 60_000;
  const limits: number[] = [];
  for (let now = 0; now < 120_000; ) {
    const e = events.pop();
    now = e.t;
    while (now > next) {
      limits.push(a.limit);
      next += 100;
    }
    if (e.end) {
      a.sample(now - e.start, e.at);
      inFlight--;
      events.push({ t: now, end: false, start: 0, at: 0 });
    } else if (inFlight < a.limit) {
      inFlight++;
      events.push({ t: now + 100 * Math.max(1, inFlight / capacity), end: true, start: now, at: inFlight });
    } else events.push({ t: now + 20, end: false, start: 0, at: 0 });
  }
  return limits.sort((x, y) => x - y)[limits.length >> 1];
}

describe('AdaptiveLimit', () => {
  it.each([10, 40, 150])('settles within 0.7x to 1.3x of an upstream of fixed capacity %i', (capacity) => {
    const limit = settledLimit(capacity);
    expect(limit).toBeGreaterThanOrEqual(0.7 * capacity);
    expect(limit).toBeLessThanOrEqual(1.3 * capacity);
  });

  it('stays within min and max, and holds while the upstream is used below half of it', () => {
    const a = new AdaptiveLimit({ min: 4, max: 30, initial: 10, smoothing: 1, tolerance: 1.1 });
    // The baseline: 25 responses admitted at low concurrency, 100 ms each.
    for (let i = 0; i < 25; i++) a.sample(100, 1);
    expect(a.baselineMs).toBe(100);
    expect(a.limit).toBe(10);
    // Fast, but at 2 in flight of 10: no growth.
    for (let i = 0; i < 100; i++) a.sample(100, 2);
    expect(a.limit).toBe(10);
    for (let i = 0; i < 500; i++) a.sample(100, a.limit);
    expect(a.limit).toBe(30);
    for (let i = 0; i < 500; i++) a.sample(1000, a.limit);
    expect(a.limit).toBe(4);
  });
});
