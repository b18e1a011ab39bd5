import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { LogRecord } from './log-record.js';
import { ReorderWindow } from './reorder-window.js';

/** Feeds `times` through a window, taking every record it lets go; returns their (time, line) in that order. */
function pass(times: readonly number[], windowMs: number, maxHeld?: number) {
  const w = new ReorderWindow(windowMs, maxHeld);
  const out: [number, number][] = [];
  const takeReady = (all: boolean) => {
    const taken: LogRecord[] = [];
    while (all ? w.size > 0 : w.ready) {
      out.push([w.head.timeMs, w.headLine]);
      taken.push(w.head);
      w.shift();
    }
    for (const r of taken) w.recycle(r);
  };
  times.forEach((t, i) => {
    w.slot().timeMs = t;
    w.commit(i + 1);
    takeReady(false);
  });
  takeReady(true);
  return { out, w };
}

describe('ReorderWindow', () => {
  it('puts lines late by at most the window back in time order, stable for equal times, each line once', () => {
    fc.assert(
      fc.property(
        fc.array(fc.record({ at: fc.integer({ min: 0, max: 600 }), late: fc.integer({ min: 0, max: 59 }) }), {
          maxLength: 300,
        }),
        (reqs) => {
          // A web server stamps a request's start and writes its line at its end: lines in order of their end.
          const lines = reqs
            .map((r) => ({ start: r.at * 1000, end: (r.at + r.late) * 1000 }))
            .sort((a, b) => a.end - b.end);
          const { out, w } = pass(
            lines.map((l) => l.start),
            60_000,
          );
          expect(out.map(([, line]) => line).sort((a, b) => a - b)).toEqual(lines.map((_, i) => i + 1));
          for (let i = 1; i < out.length; i++) {
            expect(out[i][0]).toBeGreaterThanOrEqual(out[i - 1][0]);
            if (out[i][0] === out[i - 1][0]) expect(out[i][1]).toBeGreaterThan(out[i - 1][1]);
          }
          expect(w.late).toBe(0);
        },
      ),
    );
  });

  it('lets go of a line late by more than the window at once, and counts it', () => {
    const { out, w } = pass([10_000, 80_000, 70_000, 90_000, 5_000, 95_000], 60_000);
    // 10 s went when 80 s came; 70 s is put back before 80 s; 5 s came after 10 s went, 85 s behind the newest.
    expect(out.map(([t]) => t)).toEqual([10_000, 5_000, 70_000, 80_000, 90_000, 95_000]);
    expect(w.late).toBe(1);
    expect(w.maxLateMs).toBe(85_000);
    expect(w.reordered).toBe(1);
  });

  it('holds at most maxHeld lines whatever the window: the earliest go first', () => {
    const times = Array.from({ length: 1000 }, (_, i) => i);
    const w = new ReorderWindow(3_600_000, 64);
    let most = 0;
    let taken = 0;
    for (const t of times) {
      w.slot().timeMs = t;
      w.commit(t + 1);
      most = Math.max(most, w.size);
      while (w.ready) {
        const r = w.head;
        w.shift();
        w.recycle(r);
        taken++;
      }
    }
    expect(most).toBeLessThanOrEqual(65);
    expect(taken).toBe(1000 - w.size);
    expect(w.early).toBe(taken);
    // Records are reused: no more exist than the window held, and one being read.
    expect(w.records).toBeLessThanOrEqual(66);
  });

  it('with a window of 0 lets every line go as it comes', () => {
    const { out, w } = pass([5000, 3000, 4000], 0);
    expect(out.map(([t]) => t)).toEqual([5000, 3000, 4000]);
    expect(w.late).toBe(2);
    expect(w.maxLateMs).toBe(2000);
  });
});
