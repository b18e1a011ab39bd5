import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { Limiter, ManualClock, type PolicyOptions } from '../core/index.js';
import { MemoryStore } from '../memory/index.js';
import type { HeaderMode } from './header-mode.js';
import { createHttpLimiter } from './http-limiter.js';
import type { HttpRequestInfo, Verdict } from './types.js';

const POLICIES: PolicyOptions[] = [
  { name: 'minute', quota: 3, window: 60, burst: 3 },
  { name: 'hour', quota: 5, window: 3600, burst: 5 },
  { name: 'seal', quota: 1, window: 3600, burst: 1 },
];

function limiterOf(headers: HeaderMode) {
  const clock = new ManualClock(0);
  const store = new MemoryStore({ clock, sweepIntervalMs: 0 });
  const limiter = new Limiter({ policies: POLICIES, store });
  const http = createHttpLimiter({
    limiter,
    headers,
    denialBodies: false,
    rules: [
      { name: 'all', policies: ['minute', 'hour'], key: 'ip' },
      { name: 'seal', path: '/seal', policies: ['seal'], key: 'ip' },
    ],
  });
  return { clock, store, http };
}

const request = (ip: string, path: string): HttpRequestInfo => ({
  method: 'GET',
  path,
  headers: {},
  remoteAddress: ip,
});

/** A verdict's facts as a caller reads them, copied (the decision through its JSON form). */
const facts = (v: Verdict) => JSON.parse(JSON.stringify({ ...v, decision: v.decision }));

describe('verdicts given back', () => {
  it('decide every request as verdicts never given back do, and leave alone those still held (property)', () => {
    const steps = fc.array(
      fc.record({
        ip: fc.constantFrom('192.0.2.1', '192.0.2.2', '192.0.2.3'),
        path: fc.constantFrom('/a', '/seal'),
        advanceMs: fc.constantFrom(0, 1000, 20_000),
        giveBack: fc.boolean(),
      }),
      { minLength: 1, maxLength: 40 },
    );
    fc.assert(
      fc.property(steps, fc.constantFrom<HeaderMode>('none', 'draft-11'), (list, headers) => {
        const mine = limiterOf(headers);
        const fresh = limiterOf(headers);
        const held: { v: Verdict; copy: unknown }[] = [];
        for (const s of list) {
          mine.clock.advance(s.advanceMs);
          fresh.clock.advance(s.advanceMs);
          const v = mine.http.evaluate(request(s.ip, s.path)) as Verdict;
          const w = fresh.http.evaluate(request(s.ip, s.path)) as Verdict;
          expect(facts(v)).toEqual(facts(w));
          if (s.giveBack) {
            mine.http.recycle(v);
            if (v.decision !== undefined) mine.store.recycle(v.decision);
          } else held.push({ v, copy: facts(v) });
        }
        for (const h of held) expect(facts(h.v)).toEqual(h.copy);
      }),
      { numRuns: 300 },
    );
  });

  it('write the next admission without headers into one given back', () => {
    const { http, store } = limiterOf('none');
    const first = http.evaluate(request('192.0.2.1', '/a')) as Verdict;
    http.recycle(first);
    store.recycle(first.decision as NonNullable<Verdict['decision']>);
    const next = http.evaluate(request('192.0.2.2', '/a')) as Verdict;
    expect(next).toBe(first);
    expect(next.key).toBe('ip:192.0.2.2');
    expect(next.clientIp).toBe('192.0.2.2');
  });
});
