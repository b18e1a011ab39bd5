import { describe, expect, it } from 'vitest';
import { correlationIdOf, isValidCorrelationId, newCorrelationId } from './correlation-id.js';

describe('generated correlation ids', () => {
  it('are the process prefix and a sequence in base 36 that counts up by one, across digit boundaries', () => {
    // Past 36 and 1,296 (one and two base-36 digits) and further: each id is the next integer, written as
    // Number#toString(36) writes it (no leading zeros), behind one prefix.
    const first = newCorrelationId();
    const dash = first.lastIndexOf('-');
    const prefix = first.slice(0, dash + 1);
    let n = Number.parseInt(first.slice(dash + 1), 36);
    for (let i = 0; i < 50_000; i++) {
      const id = newCorrelationId();
      expect(id.startsWith(prefix)).toBe(true);
      const suffix = id.slice(prefix.length);
      n += 1;
      expect(suffix).toBe(n.toString(36));
      expect(isValidCorrelationId(id)).toBe(true);
    }
  });

  it('are used when the request carries none, and a valid request id is echoed', () => {
    expect(correlationIdOf({ 'x-request-id': ' abc-123 ' })).toBe('abc-123');
    expect(correlationIdOf({ 'x-request-id': 'no spaces allowed' })).not.toBe('no spaces allowed');
  });
});
