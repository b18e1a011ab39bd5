import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { compileEndpoint, compilePathPattern, PathSegments } from './path-pattern.js';

describe('path patterns', () => {
  it.each([
    ['/health', '/health', true],
    ['/health', '/HEALTH', true],
    ['/health', '/health/', true],
    ['/health', '/health?verbose=1', true],
    ['/health', '/healthz', false],
    ['/health', '/health/x', false],
    ['/', '/', true],
    ['/', '/a', false],
    ['/.well-known/*', '/.well-known/openid-configuration', true],
    ['/.well-known/*', '/.well-known/acme-challenge/x', true],
    ['/.well-known/*', '/.well-known', true],
    ['/.well-known/*', '/.well-known/', true],
    ['/.well-known/*', '/.well-knownx', false],
    ['/api/studio/*', '/api/studio/', true],
    ['/api/studio/*', '/api/studio', true],
    ['/api/studio/*', '/api', false],
    ['/*', '/', true],
    ['/api/*/items', '/api/v1/items', true],
    ['/api/*/items', '/api/v1/v2/items', false],
    ['/api/*/items', '/api//items', false],
    ['/hooks/:webhook_id', '/hooks/abc', true],
    ['/hooks/:webhook_id', '/hooks', false],
    ['/hooks/:webhook_id', '/hooks/abc/def', false],
  ])('%s on %s is %s', (pattern, path, expected) => {
    expect(compilePathPattern(pattern).match(path)).toBe(expected);
  });

  it('captures parameters', () => {
    const p = compilePathPattern('/orgs/:org/hooks/:webhook_id');
    expect(p.params).toEqual(['org', 'webhook_id']);
    expect(p.capture('/orgs/o1/hooks/h2?x')).toEqual({ org: 'o1', webhook_id: 'h2' });
    expect(p.capture('/orgs/o1')).toBeUndefined();
  });

  it.each(['api', '/a//b', '/a*', '/:', '/a:b', '/:a:b'])('rejects %j', (bad) => {
    expect(() => compilePathPattern(bad)).toThrow(/pattern/);
  });

  it('agrees with a reference split-and-compare matcher on random paths', () => {
    const seg = fc.constantFrom('a', 'b', 'A', 'api', '', 'x.y');
    const pat = fc.array(fc.constantFrom('a', 'b', 'api', 'x.y', '*', ':p'), { minLength: 0, maxLength: 4 });
    fc.assert(
      fc.property(pat, fc.array(seg, { maxLength: 5 }), fc.boolean(), (parts, pathParts, slash) => {
        const source = `/${parts.join('/')}`;
        const path = `/${pathParts.join('/')}${slash && pathParts.length > 0 ? '/' : ''}`;
        const got = compilePathPattern(source).match(path);
        // One trailing slash is insignificant; the root pattern matches only "/" itself.
        const trimmed = path.length > 1 && path.endsWith('/') ? path.slice(0, -1) : path;
        const segs = trimmed === '/' ? [] : trimmed.slice(1).split('/');
        let want: boolean;
        if (parts.length === 0) want = path === '/';
        else {
          const rest = parts[parts.length - 1] === '*';
          const fixed = rest ? parts.slice(0, -1) : parts;
          // A last `*` matches the prefix itself too: routers serve it with the routes below it.
          want = rest ? segs.length >= fixed.length : segs.length === fixed.length;
          for (let i = 0; want && i < fixed.length; i++) {
            const s = segs[i];
            want = s !== '' && (fixed[i] === '*' || fixed[i] === ':p' || fixed[i] === s.toLowerCase());
          }
          if (want && rest && segs.length > fixed.length)
            want = segs.slice(fixed.length).join('/') !== '' && segs[fixed.length] !== '';
        }
        expect(got).toBe(want);
      }),
      { numRuns: 500 },
    );
  });
});

describe('a path cut once for many patterns', () => {
  // Paths with empty segments, doubled and trailing slashes, queries, case and no leading slash: every way a
  // cut could drift from the walk of a single pattern.
  const part = fc.constantFrom('a', 'B', 'api', 'x.y', '', '?q=1', '?', '/');
  const pathOf = fc.tuple(fc.boolean(), fc.array(part, { maxLength: 7 })).map(([rooted, parts]) => {
    const p = parts.join('/');
    return rooted ? `/${p}` : p;
  });
  const patternOf = fc
    .array(fc.constantFrom('a', 'b', 'api', 'x.y', '*', ':p'), { maxLength: 5 })
    .map((parts) => `/${parts.join('/')}`)
    .filter((source) => {
      try {
        compilePathPattern(source);
        return true;
      } catch {
        return false;
      }
    });

  it('answers as each pattern alone does, prefix included or not', () => {
    fc.assert(
      fc.property(fc.array(patternOf, { minLength: 1, maxLength: 4 }), pathOf, (sources, path) => {
        const patterns = sources.flatMap((source) => [
          compilePathPattern(source),
          compilePathPattern(source, 'p', { includePrefix: false }),
        ]);
        // One cut, deep enough for the deepest pattern, reused after another path was cut.
        const cut = new PathSegments(Math.max(...patterns.map((p) => p.depth)));
        cut.cut('/zz/zz/zz/zz/zz/zz/zz/zz');
        cut.cut(path);
        for (const p of patterns) expect(p.matchSegments(cut), `${p.source} on ${path}`).toBe(p.match(path));
      }),
      { numRuns: 3000 },
    );
  });

  it('handles the edges the walk handles', () => {
    const cases: [string, string][] = [
      ['/', '/'],
      ['/', '/?x'],
      ['/', '//'],
      ['/*', '/'],
      ['/*', '//'],
      ['/a/*', '/a'],
      ['/a/*', '/a/'],
      ['/a/*', '/a//'],
      ['/a/*', '/a//b'],
      ['/a', 'a'],
      ['/a/b', '/a/b/c'],
    ];
    for (const [source, path] of cases) {
      for (const includePrefix of [true, false]) {
        const p = compilePathPattern(source, 'p', { includePrefix });
        expect(p.matchSegments(new PathSegments(p.depth).cut(path)), `${source} ${path}`).toBe(p.match(path));
      }
    }
  });
});

describe('endpoints', () => {
  it('parse methods and let GET cover HEAD', () => {
    const e = compileEndpoint('GET /health');
    expect(e.match('GET', '/health')).toBe(true);
    expect(e.match('head', '/health')).toBe(true);
    expect(e.match('POST', '/health')).toBe(false);
    expect(compileEndpoint('/metrics').match('DELETE', '/metrics')).toBe(true);
    expect(compileEndpoint('PUT,PATCH /x').methods).toEqual(['PUT', 'PATCH']);
  });

  it('exempt no more than they name: a prefix is not below itself', () => {
    // An exemption that took `/a` from `/a/*` would lift the limit of an exact rule `/a`.
    expect(compileEndpoint('GET /.well-known/*').match('GET', '/.well-known/')).toBe(false);
    expect(compileEndpoint('GET /.well-known/*').match('GET', '/.well-known')).toBe(false);
    expect(compileEndpoint('GET /.well-known/*').match('GET', '/.well-known/x')).toBe(true);
    expect(compileEndpoint('GET /health').match('GET', '/health/')).toBe(true);
  });

  it('exempt paths in their own case only, where rules count every case', () => {
    // A case-sensitive upstream serves /.WELL-KNOWN/x through a route the rules protect, not the exempt one.
    const e = compileEndpoint('GET /.well-known/*');
    expect(e.match('GET', '/.WELL-KNOWN/x')).toBe(false);
    expect(e.match('GET', '/.Well-Known/openid-configuration')).toBe(false);
    expect(e.match('GET', '/.well-known/X')).toBe(true);
    expect(compileEndpoint('GET /Health').match('GET', '/health')).toBe(false);
    expect(compileEndpoint('GET /Health').match('GET', '/Health')).toBe(true);
    const cut = new PathSegments(2).cut('/.WELL-KNOWN/x');
    expect(e.matchSegments('GET', cut)).toBe(false);
    expect(compilePathPattern('/.well-known/*').matchSegments(cut)).toBe(true);
  });
});
