import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { MemoryStore } from '../memory/index.js';
import { type Decision, definePolicy, ErrorCode, Limiter, ManualClock, SluiceError } from './index.js';

function setup(policies = [{ name: 'rl.write', quota: 120, window: 60, burst: 30 }]) {
  const clock = new ManualClock(1_000);
  const store = new MemoryStore({ clock, sweepIntervalMs: 0 });
  return { clock, store, limiter: new Limiter({ policies, store, clock }) };
}
const sync = (d: Decision | Promise<Decision>) => d as Decision;

describe('Limiter', () => {
  it('starts full and admits exactly burst at a frozen clock, then denies with ceil(60 / per_minute)', () => {
    const { limiter } = setup([{ name: 'rl.read', quota: 7, window: 60, burst: 5 }]);
    for (let i = 0; i < 5; i++) expect(sync(limiter.check('rl.read', 'k')).allowed).toBe(true);
    const d = sync(limiter.check('rl.read', 'k'));
    expect(d).toMatchObject({ allowed: false, reason: 'limited', retryAfterSeconds: Math.ceil(60 / 7) });
  });

  it('keeps policies independent: draining one leaves another untouched', () => {
    const { limiter } = setup([
      { name: 'rl.write', quota: 60, window: 60, burst: 2 },
      { name: 'rl.read', quota: 60, window: 60, burst: 2 },
    ]);
    limiter.check('rl.write', 'u');
    limiter.check('rl.write', 'u');
    expect(sync(limiter.check('rl.write', 'u')).allowed).toBe(false);
    expect(sync(limiter.check('rl.read', 'u')).outcomes[0].remaining).toBe(1);
  });

  it('throws ERR_UNKNOWN_POLICY for an unknown name or a foreign policy', () => {
    const { limiter } = setup();
    expect(() => limiter.check('rl.nope', 'k')).toThrow(SluiceError);
    try {
      limiter.check('rl.nope', 'k');
    } catch (e) {
      expect((e as SluiceError).code).toBe(ErrorCode.UnknownPolicy);
      expect((e as SluiceError).message).toContain('rl.write');
    }
    const foreign = definePolicy({ name: 'rl.write', quota: 1, window: 1 });
    expect(() => limiter.decide([{ policy: foreign, key: 'k' }])).toThrow(/does not belong/);
    expect(limiter.has('rl.write')).toBe(true);
    expect(limiter.has('rl.nope')).toBe(false);
  });

  it('rejects duplicate names, empty policy lists, bad stores, unknown options and bad costs', () => {
    const store = new MemoryStore({ sweepIntervalMs: 0 });
    const p = { name: 'a', quota: 1, window: 1 };
    expect(() => new Limiter({ policies: [p, p], store })).toThrow(/used twice/);
    expect(() => new Limiter({ policies: [], store })).toThrow(/policies must be a non-empty array/);
    expect(() => new Limiter({ policies: [p], store: {} as never })).toThrow(
      /store must be a RateLimitStore/,
    );
    expect(() => new Limiter({ policies: [p], store, extra: 1 } as never)).toThrow(/Limiter options\.extra/);
    const { limiter } = setup();
    for (const cost of [0, -1, 1.5, Number.NaN]) {
      expect(() => limiter.check('rl.write', 'k', cost)).toThrow(/cost must be a whole number of tokens/);
    }
  });

  it('names the method, the expected and the given value of an invalid cost, as option errors do', async () => {
    const { limiter } = setup();
    const checks = [{ policy: 'rl.write', key: 'k' }];
    const cases: [string, () => unknown, string][] = [
      ['Limiter.check cost', () => limiter.check('rl.write', 'k', 0), '0'],
      ['Limiter.decide cost', () => limiter.decide(checks, 1.5), '1.5'],
      ['Limiter.peek cost', () => limiter.peek(checks, Number.NaN), 'NaN'],
      // A string that looks like a number is shown quoted, so it cannot pass for one.
      ['Limiter.refund cost', () => limiter.refund(checks, '2' as never), '"2"'],
      ['Limiter.check cost', () => limiter.check('rl.write', 'k', 2 ** 53), '9007199254740992'],
    ];
    const expected = 'a whole number of tokens (a safe integer >= 1)';
    for (const [option, call, given] of cases) {
      let error: unknown;
      try {
        call();
      } catch (e) {
        error = e;
      }
      expect(error).toBeInstanceOf(SluiceError);
      expect(error).toMatchObject({
        code: ErrorCode.InvalidCost,
        message: `${option} must be ${expected}, got ${given}`,
        details: { option, expected, given },
      });
    }
    await expect(limiter.wait(checks, { cost: -1 })).rejects.toMatchObject({
      code: ErrorCode.InvalidCost,
      message: `Limiter.wait options.cost must be ${expected}, got -1`,
      details: { option: 'Limiter.wait options.cost', expected, given: '-1' },
    });
  });

  it('accepts ready-made policies and passes resolved checks through untouched', () => {
    const write = definePolicy({ name: 'rl.write', quota: 120, window: 60, burst: 30 });
    const store = new MemoryStore({ sweepIntervalMs: 0 });
    const limiter = new Limiter({ policies: [write], store });
    expect(limiter.policy('rl.write')).toBe(write);
    const checks = limiter.resolve([{ policy: 'rl.write', key: 'k' }]);
    expect(checks[0].policy).toBe(write);
    expect(sync(limiter.decide(checks, 3)).outcomes[0].remaining).toBe(27);
    expect(sync(limiter.peek(checks)).outcomes[0].remaining).toBe(27);
    limiter.refund(checks, 2);
    expect(sync(limiter.peek([{ policy: 'rl.write', key: 'k' }])).outcomes[0].remaining).toBe(29);
    limiter.reset('k');
    expect(sync(limiter.peek(checks)).outcomes[0].remaining).toBe(30);
    limiter.decide(checks, 30);
    limiter.reset('k', 'rl.write');
    expect(sync(limiter.peek(checks)).outcomes[0].remaining).toBe(30);
  });

  it('never admits more than burst + rate x elapsed, and never denies while the bucket holds the cost (property)', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 600 }),
        fc.integer({ min: 1, max: 120 }),
        fc.integer({ min: 1, max: 50 }),
        fc.array(
          fc.record({ advance: fc.integer({ min: 0, max: 5_000 }), cost: fc.integer({ min: 1, max: 10 }) }),
          {
            maxLength: 200,
          },
        ),
        (quota, window, burst, steps) => {
          const { limiter, clock } = setup([{ name: 'p', quota, window, burst }]);
          const start = clock.now();
          let admitted = 0;
          let tokens = burst; // an independent float model, only to know when the bucket holds the cost
          let last = start;
          for (const s of steps) {
            clock.advance(s.advance);
            tokens = Math.min(burst, tokens + ((clock.now() - last) * quota) / (window * 1000));
            last = clock.now();
            const d = sync(limiter.check('p', 'k', s.cost));
            if (d.allowed) {
              admitted += s.cost;
              tokens -= s.cost;
            } else if (s.cost <= burst) {
              // Denied only when the exact bucket lacks the cost (float model within rounding).
              expect(tokens).toBeLessThan(s.cost + 1e-6);
            }
            const elapsedS = (clock.now() - start) / 1000;
            expect(admitted).toBeLessThanOrEqual(burst + (quota / window) * elapsedS + 1e-9);
          }
        },
      ),
      { numRuns: 200 },
    );
  });
});

describe('Limiter.wait', () => {
  const queued = [{ name: 'q', quota: 60, window: 60, burst: 1, queue: { limit: 2, maxWaitMs: 2_000 } }];

  it('admits at once when tokens are there, and after the delay when queued', async () => {
    const { limiter, clock } = setup(queued);
    expect((await limiter.wait([{ policy: 'q', key: 'k' }])).delayMs).toBe(0);
    let done = false;
    const p = limiter.wait([{ policy: 'q', key: 'k' }]).then((d) => {
      done = true;
      return d;
    });
    await Promise.resolve();
    await Promise.resolve();
    expect(clock.pendingSleeps).toBe(1);
    clock.advance(999);
    await Promise.resolve();
    expect(done).toBe(false);
    clock.advance(1);
    expect(await p).toMatchObject({ allowed: true, delayMs: 1_000 });
  });

  it('honours the queue bounds: beyond limit or max wait is a denial, not a wait', async () => {
    const { limiter } = setup(queued);
    const k = [{ policy: 'q', key: 'k' }];
    await limiter.wait(k);
    void limiter.wait(k); // waits 1 s
    void limiter.wait(k); // waits 2 s
    const third = await limiter.wait(k); // would owe 3 tokens > limit 2
    expect(third.allowed).toBe(false);
    const { limiter: noQueue } = setup();
    const kk = [{ policy: 'rl.write', key: 'k' }];
    await noQueue.wait(kk, { cost: 30 });
    expect((await noQueue.wait(kk)).allowed).toBe(false);
  });

  it('returns the tokens of a cancelled wait and rejects with ERR_ABORTED', async () => {
    const { limiter, store } = setup(queued);
    const k = limiter.resolve([{ policy: 'q', key: 'k' }]);
    await limiter.wait(k);
    const ac = new AbortController();
    const p = limiter.wait(k, { signal: ac.signal });
    await Promise.resolve();
    expect(store.peek(k, 1).outcomes[0].remaining).toBe(0);
    ac.abort();
    await expect(p).rejects.toMatchObject({ code: ErrorCode.Aborted });
    // The debt of the cancelled wait is gone: a new wait needs 1 s again, not 2.
    expect(store.reserve(k, 1).delayMs).toBe(1_000);
    const already = new AbortController();
    already.abort();
    await expect(limiter.wait(k, { signal: already.signal })).rejects.toMatchObject({
      code: ErrorCode.Aborted,
    });
  });
});
