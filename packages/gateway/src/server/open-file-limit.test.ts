import { describe, expect, it } from 'vitest';
import { capExceedsFileLimit, defaultMaxConnections, openFileLimit } from './open-file-limit.js';

const LIMITS = `Limit                     Soft Limit           Hard Limit           Units
Max processes             127618               127618               processes
Max open files            20000                524288               files
Max locked memory         8388608              8388608              bytes
`;

describe('the open file limit', () => {
  it('reads the soft limit of /proc/self/limits, and nothing from an unlimited or missing line', () => {
    expect(openFileLimit(LIMITS)).toBe(20_000);
    expect(openFileLimit(LIMITS.replace('20000 ', 'unlimited '))).toBeUndefined();
    expect(openFileLimit('')).toBeUndefined();
  });

  it('derives the default cap: 45% of the limit, at most 10,000, 10,000 when unknown', () => {
    expect(defaultMaxConnections(1024)).toBe(460);
    expect(defaultMaxConnections(20_000)).toBe(9000);
    expect(defaultMaxConnections(1_048_576)).toBe(10_000);
    expect(defaultMaxConnections(undefined)).toBe(10_000);
    expect(defaultMaxConnections(1)).toBe(1);
  });

  it('calls a cap too high when it takes more than that share of the limit', () => {
    expect(capExceedsFileLimit(460, 1024)).toBe(false);
    expect(capExceedsFileLimit(461, 1024)).toBe(true);
    expect(capExceedsFileLimit(0, 1024)).toBe(false);
    expect(capExceedsFileLimit(1_000_000, undefined)).toBe(false);
  });
});
