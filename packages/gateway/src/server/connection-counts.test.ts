import { describe, expect, it } from 'vitest';
import { ConnectionCounts } from './connection-counts.js';

const taken = (r: unknown): r is () => void => typeof r === 'function';

describe('ConnectionCounts', () => {
  it('refuses a connection over the total cap until one closes', () => {
    const c = ConnectionCounts.create();
    const caps = { total: 3, perClient: 0 };
    const slots = ['a', 'b', 'c'].map((ip) => c.take(ip, caps));
    expect(slots.every(taken)).toBe(true);
    expect(c.take('d', caps)).toBe('total');
    expect(c.open).toBe(3);
    (slots[0] as () => void)();
    expect(taken(c.take('d', caps))).toBe(true);
  });

  it('refuses a client over its cap, not another client, and a refusal takes no slot', () => {
    const c = ConnectionCounts.create();
    const caps = { total: 100, perClient: 2 };
    expect(taken(c.take('ip:192.0.2.1', caps))).toBe(true);
    expect(taken(c.take('ip:192.0.2.1', caps))).toBe(true);
    expect(c.take('ip:192.0.2.1', caps)).toBe('client');
    expect(c.open).toBe(2);
    expect(taken(c.take('ip:192.0.2.2', caps))).toBe(true);
  });

  it('counts a connection without a client (a trusted proxy) in the total only', () => {
    const c = ConnectionCounts.create();
    const caps = { total: 10, perClient: 1 };
    for (let i = 0; i < 5; i++) expect(taken(c.take(undefined, caps))).toBe(true);
    expect(c.take(undefined, { total: 5, perClient: 1 })).toBe('total');
  });

  it('caps nothing at 0', () => {
    const c = ConnectionCounts.create();
    for (let i = 0; i < 50; i++) expect(taken(c.take('ip:192.0.2.1', { total: 0, perClient: 0 }))).toBe(true);
    expect(c.open).toBe(50);
  });

  it('releases a slot once however often its release is called', () => {
    const c = ConnectionCounts.create();
    const caps = { total: 1, perClient: 1 };
    const release = c.take('ip:192.0.2.1', caps) as () => void;
    release();
    release();
    expect(c.open).toBe(0);
    expect(taken(c.take('ip:192.0.2.1', caps))).toBe(true);
    expect(c.take('ip:192.0.2.1', caps)).toBe('total');
  });

  it('shares its counts with every view on the same buffer, as the threads of one process do', () => {
    const first = ConnectionCounts.create();
    const second = ConnectionCounts.on(first.buffer);
    const caps = { total: 10, perClient: 2 };
    expect(taken(first.take('ip:192.0.2.1', caps))).toBe(true);
    expect(taken(second.take('ip:192.0.2.1', caps))).toBe(true);
    expect(first.take('ip:192.0.2.1', caps)).toBe('client');
    expect(second.open).toBe(2);
  });
});
