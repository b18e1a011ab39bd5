import { describe, expect, it } from 'vitest';
import { type Decision, Limiter, SluiceError } from '../core/index.js';
import { MemoryStore } from '../memory/index.js';
import { combineMetrics } from './combine-metrics.js';
import { decideWithMetrics } from './decide-with-metrics.js';
import { LabelGuard, OTHER_LABEL } from './label-guard.js';
import type { DecisionLabels } from './limiter-metrics.js';
import { NoopMetrics, noopMetrics } from './noop-metrics.js';

class Recorder extends NoopMetrics {
  readonly calls: string[] = [];
  override recordDecision(d: Decision, labels?: DecisionLabels, seconds?: number): void {
    this.calls.push(`decision:${d.allowed}:${labels?.tier ?? ''}:${seconds !== undefined}`);
  }
  override recordStoreError(store: string): void {
    this.calls.push(`error:${store}`);
  }
}

class Broken extends NoopMetrics {
  override recordDecision(): void {
    throw new Error('broken sink');
  }
  override recordStoreError(): void {
    throw new Error('broken sink');
  }
}

describe('LabelGuard', () => {
  it('keeps an allow-list closed', () => {
    const g = new LabelGuard('tier', ['free', 'standard'], 10);
    expect(g.value('free')).toBe('free');
    expect(g.value('gold')).toBe(OTHER_LABEL);
    expect(g.overflowed).toBe(true);
    expect(g.size).toBe(2);
  });

  it('admits the first values up to the limit without an allow-list', () => {
    const g = new LabelGuard('rule', undefined, 2);
    expect([g.value('a'), g.value('b'), g.value('c'), g.value('a')]).toEqual(['a', 'b', 'other', 'a']);
  });

  it('rejects an invalid limit or a non-string value', () => {
    expect(() => new LabelGuard('x', undefined, 0)).toThrow(SluiceError);
    expect(() => new LabelGuard('x', [1 as never], 5)).toThrow(/x label values must be strings/);
  });
});

describe('combineMetrics', () => {
  it('calls every sink in order and isolates a sink that throws', () => {
    const a = new Recorder();
    const b = new Recorder();
    const m = combineMetrics(a, new Broken(), b);
    const limiter = new Limiter({
      policies: [{ name: 'p', quota: 1, window: 60 }],
      store: new MemoryStore({ sweepIntervalMs: 0 }),
    });
    m.recordDecision(limiter.check('p', 'k') as Decision, { tier: 'free' });
    m.recordStoreError('redis');
    expect(a.calls).toEqual(['decision:true:free:false', 'error:redis']);
    expect(b.calls).toEqual(a.calls);
  });

  it('returns the no-op sink for none and the sink itself for one', () => {
    const a = new Recorder();
    expect(combineMetrics()).toBe(noopMetrics);
    expect(combineMetrics(a)).toBe(a);
  });
});

describe('decideWithMetrics', () => {
  it('stays synchronous for a synchronous store and records the latency', () => {
    const limiter = new Limiter({
      policies: [{ name: 'p', quota: 1, window: 60 }],
      store: new MemoryStore({ sweepIntervalMs: 0 }),
    });
    const r = new Recorder();
    let t = 0;
    const d = decideWithMetrics(limiter, [{ policy: 'p', key: 'k' }], 1, r, { tier: 't' }, () => (t += 2));
    expect(d).not.toBeInstanceOf(Promise);
    expect((d as Decision).allowed).toBe(true);
    expect(r.calls).toEqual(['decision:true:t:true']);
  });

  it('lets validation errors through without counting a store error', () => {
    const limiter = new Limiter({
      policies: [{ name: 'p', quota: 1, window: 60 }],
      store: new MemoryStore({ sweepIntervalMs: 0 }),
    });
    const r = new Recorder();
    expect(() => decideWithMetrics(limiter, [{ policy: 'nope', key: 'k' }], 1, r)).toThrow(/unknown policy/);
    expect(r.calls).toEqual([]);
  });
});
