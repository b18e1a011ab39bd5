import { describe, expect, it } from 'vitest';
import { newRequestId, requestIdOf } from './request-id.js';

const UUID_V4 = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

describe('request ids', () => {
  it('makes random version 4 UUIDs, all distinct, across several refills of the pool', () => {
    const seen = new Set<string>();
    for (let i = 0; i < 5_000; i++) {
      const id = newRequestId();
      expect(id).toMatch(UUID_V4);
      seen.add(id);
    }
    expect(seen.size).toBe(5_000);
  });

  it('spreads every hex digit over the random positions (no constant or stuck nibble)', () => {
    const digits = Array.from({ length: 36 }, () => new Set<string>());
    for (let i = 0; i < 2_000; i++) {
      const id = newRequestId();
      for (let p = 0; p < 36; p++) digits[p]?.add(id[p] as string);
    }
    for (let p = 0; p < 36; p++) {
      if ([8, 13, 18, 23].includes(p)) expect([...(digits[p] ?? [])]).toEqual(['-']);
      else if (p === 14) expect([...(digits[p] ?? [])]).toEqual(['4']);
      else if (p === 19) expect([...(digits[p] ?? [])].sort()).toEqual(['8', '9', 'a', 'b']);
      else expect(digits[p]?.size).toBe(16);
    }
  });

  it('echoes a safe id the client sent, and replaces an unsafe one', () => {
    expect(requestIdOf('abc-123')).toBe('abc-123');
    expect(requestIdOf(['first', 'second'])).toBe('first');
    expect(requestIdOf('bad\u0000id')).toMatch(UUID_V4);
    expect(requestIdOf(undefined)).toMatch(UUID_V4);
  });
});
