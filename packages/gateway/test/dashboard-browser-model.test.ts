import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { RateModel } from '../dashboard-ui/src/rate-model.js';
import { EventStreamParser } from '../dashboard-ui/src/sse-parser.js';
import type { SeriesInfo } from '../src/dashboard/dashboard-frame.js';

describe('EventStreamParser', () => {
  it('parses events, multi-line data, comments and CRLF', () => {
    const p = new EventStreamParser();
    expect(p.push('retry: 1000\n\n: comment\nevent: tick\ndata: {"a":1}\n\n')).toEqual([
      { event: 'tick', data: '{"a":1}' },
    ]);
    expect(p.push('data: one\r\ndata:two\r\n\r\n')).toEqual([{ event: 'message', data: 'one\ntwo' }]);
  });

  it('property: however the stream is cut into chunks, the same events come out', () => {
    const text =
      'event: snapshot\ndata: {"x":[1,2]}\n\nevent: tick\r\ndata: {"y":3}\r\n\r\n: keepalive\n\ndata: last\n\n';
    const whole = new EventStreamParser().push(text);
    expect(whole).toHaveLength(3);
    fc.assert(
      fc.property(fc.array(fc.integer({ min: 0, max: text.length }), { maxLength: 12 }), (cuts) => {
        const points = [...new Set(cuts)].sort((a, b) => a - b);
        const p = new EventStreamParser();
        const out = [];
        let from = 0;
        for (const c of [...points, text.length]) {
          out.push(...p.push(text.slice(from, c)));
          from = c;
        }
        expect(out).toEqual(whole);
      }),
    );
  });
});

describe('RateModel', () => {
  const series: SeriesInfo[] = [
    { id: 0, kind: 'requests', name: '', tier: 'free' },
    { id: 1, kind: 'policy', name: 'free', tier: 'free' },
    { id: 2, kind: 'requests', name: '', tier: 'standard' },
  ];

  it('aligns series on one time axis, sums views and keeps only its capacity', () => {
    const m = new RateModel(3);
    m.reset(3, series.slice(0, 2), [
      { t: 100, v: { 0: [2, 1, 0], 1: [2, 1, 0] } },
      { t: 101, v: {} },
    ]);
    m.append(
      [series[2]],
      [
        { t: 102, v: { 2: [5, 0, 1] } },
        { t: 102, v: { 2: [9, 9, 9] } },
      ],
    );
    expect(m.times).toEqual([100, 101, 102]);
    expect(m.channels({ kind: 'all' }).channels).toEqual([
      [2, 0, 5],
      [1, 0, 0],
      [0, 0, 1],
    ]);
    expect(m.totals({ kind: 'tier', tier: 'standard' }, 60)).toEqual([5, 0, 1]);
    expect(m.policyTotals(60)).toEqual([
      { policy: 'free', tier: 'free', allowed: 2, limited: 1, deniedByOther: 0 },
    ]);
    m.append([], [{ t: 103, v: { 0: [1, 0, 0] } }]);
    expect(m.times).toEqual([101, 102, 103]);
    expect(m.totals({ kind: 'all' }, 60)).toEqual([6, 0, 1]);
    expect(m.totals({ kind: 'all' }, 1)).toEqual([1, 0, 0]);
    expect(m.dimensions()).toEqual({ tiers: ['free', 'standard'], policies: ['free'] });
  });
});
