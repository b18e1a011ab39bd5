import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { Limiter, ManualClock } from '../src/core/index.js';
import { createHttpLimiter, inFlightRequests, type Verdict } from '../src/http/index.js';
import { MemoryStore } from '../src/memory/index.js';

const N = 2;

/** One step: a client's request is decided, or the i-th running response ends (finished, aborted, or both). */
type Step =
  | { readonly op: 'request'; readonly client: number }
  | { readonly op: 'end'; readonly i: number; readonly twice: boolean; readonly completed: boolean };

const steps: fc.Arbitrary<Step[]> = fc.array(
  fc.oneof(
    fc.record({ op: fc.constant('request' as const), client: fc.integer({ min: 0, max: 2 }) }),
    fc.record({ op: fc.constant('end' as const), i: fc.nat(), twice: fc.boolean(), completed: fc.boolean() }),
  ),
  { maxLength: 150 },
);

describe('concurrency slots through sluice/http, under any interleaving', () => {
  it('never more than N in flight per client nor fewer than none, whatever ends a response and how often', () => {
    fc.assert(
      fc.property(steps, (list) => {
        const store = new MemoryStore({ clock: new ManualClock(0), sweepIntervalMs: 0 });
        const limiter = new Limiter({
          policies: [
            { name: 'slots', concurrent: N },
            { name: 'rl', quota: 1000, window: 60, burst: 1000 },
          ],
          store,
        });
        const http = createHttpLimiter({
          limiter,
          rules: [{ path: '/*', policies: ['rl', 'slots'] }],
        });
        const policy = limiter.policy('slots');
        const running: { client: number; v: Verdict }[] = [];
        const held = [0, 0, 0];
        for (const s of list) {
          if (s.op === 'request') {
            const v = http.evaluate({
              method: 'GET',
              path: '/x',
              headers: {},
              remoteAddress: `192.0.2.${s.client + 1}`,
            }) as Verdict;
            if (v.action === 'allow') {
              expect(v.observer).toBeDefined();
              running.push({ client: s.client, v });
              held[s.client]++;
            } else expect(held[s.client]).toBe(N);
          } else if (running.length > 0) {
            const [r] = running.splice(s.i % running.length, 1);
            const end = {
              completed: s.completed,
              status: s.completed ? 200 : 0,
              bytesSent: 0,
              bytesReceived: 0,
            };
            r.v.observer?.end(end);
            // An abort followed by a close, or a feeder called twice: the slot comes back once.
            if (s.twice) r.v.observer?.end(end);
            held[r.client]--;
          }
          for (let c = 0; c < 3; c++) {
            const left = store.peek([{ policy, key: `ip:192.0.2.${c + 1}` }], 1).outcomes[0].remaining;
            expect(left).toBe(N - held[c]);
            expect(held[c]).toBeGreaterThanOrEqual(0);
            expect(held[c]).toBeLessThanOrEqual(N);
          }
        }
        for (const r of running.splice(0))
          r.v.observer?.end({ completed: false, status: 0, bytesSent: 0, bytesReceived: 0 });
        expect(inFlightRequests(policy)).toBe(0);
      }),
      { numRuns: 200 },
    );
  });
});
