import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { normalizePath } from '../src/limits/normalize-path.js';

const segment = fc.oneof(
  fc.constantFrom('', '.', '..', 'api', 'studio', '%73tudio', '%2F', '%2e', 'a%41b', '~x', '*'),
  fc.stringMatching(/^[A-Za-z0-9._~%-]{0,6}$/),
);
const path = fc.array(segment, { maxLength: 8 }).map((parts) => `/${parts.join('/')}`);

describe('normalizePath', () => {
  it('decodes unreserved escapes, collapses slashes and resolves dot segments', () => {
    expect(normalizePath('/api//risk/./simulation/%73tudio/x')).toBe('/api/risk/simulation/studio/x');
    expect(normalizePath('/api/risk/x/../simulation')).toBe('/api/risk/simulation');
    expect(normalizePath('/../../etc')).toBe('/etc');
    expect(normalizePath('/a/b/..')).toBe('/a/');
    expect(normalizePath('/a%2Fb')).toBe('/a%2Fb'); // an encoded slash is data, not a separator
    expect(normalizePath('/plain/path')).toBe('/plain/path');
  });

  it('is idempotent and leaves no empty, "." or ".." segment inside (property)', () => {
    fc.assert(
      fc.property(path, (p) => {
        const n = normalizePath(p);
        expect(n.startsWith('/')).toBe(true);
        expect(normalizePath(n)).toBe(n);
        const inner = n.slice(1, n.endsWith('/') ? -1 : undefined).split('/');
        if (n !== '/') for (const s of inner) expect(['', '.', '..']).not.toContain(s);
      }),
    );
  });
});
