import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { SluiceError } from '../core/index.js';
import {
  type CanonicalTarget,
  canonicalPath,
  compileTargetCanonicalizer,
  TARGET_REFUSALS,
  type TargetOptions,
  type TargetRefusalCode,
} from './request-target.js';

// The tables below compare the handling of encoded slashes with `;` parameters kept, stripped, or both decoded.
const reject = compileTargetCanonicalizer({ pathParameters: 'keep' });
const decode = compileTargetCanonicalizer({ encodedSlashes: 'decode', pathParameters: 'keep' });
const strip = compileTargetCanonicalizer({ pathParameters: 'strip' });
const decodeStrip = compileTargetCanonicalizer({ encodedSlashes: 'decode', pathParameters: 'strip' });

/** The path of an accepted target, or the refusal code. */
function outcome(result: CanonicalTarget): string {
  return result.ok ? result.path + result.query : `!${result.code}`;
}

describe('canonical request targets: RFC 3986 5.2.4, 5.4 and 6.2.2', () => {
  it.each([
    ['/', '/'],
    ['/a/b/c/./../../g', '/a/g'],
    ['/./g', '/g'],
    ['/../g', '/g'],
    ['/../../../g', '/g'],
    ['/a/b/c/g.', '/a/b/c/g.'],
    ['/a/b/c/.g', '/a/b/c/.g'],
    ['/a/b/c/g..', '/a/b/c/g..'],
    ['/a/b/c/..g', '/a/b/c/..g'],
    ['/a/b/c/./../g', '/a/b/g'],
    ['/a/b/c/./g/.', '/a/b/c/g/'],
    ['/a/b/c/g/./h', '/a/b/c/g/h'],
    ['/a/b/c/g/../h', '/a/b/c/h'],
    ['/a/b/c/g;x=1/./y', '/a/b/c/g;x=1/y'],
    ['/a/b/c/g;x=1/../y', '/a/b/c/y'],
    ['/a/b/..', '/a/'],
    ['/a/b/.', '/a/b/'],
    ['/..', '/'],
    ['/.', '/'],
    ['/%7Euser', '/~user'],
    ['/%7euser', '/~user'],
    ['/a%c2%b1b', '/a%C2%B1b'],
    ['/%41%61%30%2D%2e%5F%7E', '/Aa0-._~'],
    ['/a%3bb', '/a%3Bb'],
    ['/a%20b', '/a%20b'],
    ['/a//b///c', '/a/b/c'],
    ['//a', '/a'],
    ['/a/', '/a/'],
    ['/a//', '/a/'],
    ['/.well-known/x', '/.well-known/x'],
    ['/a?b=%2f&c=..//#'.slice(0, -1), '/a?b=%2f&c=..//'],
    ['/a//b?', '/a/b?'],
    ['/?x', '/?x'],
  ])('%j is %j', (target, expected) => {
    expect(outcome(reject(target))).toBe(expected);
  });

  it('keeps the query byte for byte, separately from the path', () => {
    expect(reject('/a/./b/?q=%2F%2e\\;x')).toEqual({ ok: true, path: '/a/b/', query: '?q=%2F%2e\\;x' });
    expect(reject('/a')).toEqual({ ok: true, path: '/a', query: '' });
  });
});

// Every shape the attacker used (and their neighbours), in each mode: reject+keep, decode, strip, decode+strip.
const ATTACKS: ReadonlyArray<readonly [string, string, string, string, string]> = [
  ['/system/airgap/seal#1', '!fragment', '!fragment', '!fragment', '!fragment'],
  ['/system/airgap/seal?x=1#1', '!fragment', '!fragment', '!fragment', '!fragment'],
  [
    '/system/airgap%2Fseal',
    '!encoded_separator',
    '/system/airgap/seal',
    '!encoded_separator',
    '/system/airgap/seal',
  ],
  [
    '/system/airgap%2fseal',
    '!encoded_separator',
    '/system/airgap/seal',
    '!encoded_separator',
    '/system/airgap/seal',
  ],
  [
    '/.well-known/..%2Fsystem%2Fairgap%2Fseal',
    '!encoded_separator',
    '/system/airgap/seal',
    '!encoded_separator',
    '/system/airgap/seal',
  ],
  [
    '/x/..%2Fsystem/airgap/seal',
    '!encoded_separator',
    '/system/airgap/seal',
    '!encoded_separator',
    '/system/airgap/seal',
  ],
  [
    '/system%5Cairgap/seal',
    '!encoded_separator',
    '/system/airgap/seal',
    '!encoded_separator',
    '/system/airgap/seal',
  ],
  ['/system\\airgap\\seal', '!backslash', '/system/airgap/seal', '!backslash', '/system/airgap/seal'],
  ['/x/..\\system/airgap/seal', '!backslash', '/system/airgap/seal', '!backslash', '/system/airgap/seal'],
  [
    '/system/airgap/seal;x',
    '/system/airgap/seal;x',
    '/system/airgap/seal;x',
    '/system/airgap/seal',
    '/system/airgap/seal',
  ],
  [
    '/system;a/airgap;b=1/seal;c',
    '/system;a/airgap;b=1/seal;c',
    '/system;a/airgap;b=1/seal;c',
    '/system/airgap/seal',
    '/system/airgap/seal',
  ],
  [
    '/x/..;/system/airgap/seal',
    '/x/..;/system/airgap/seal',
    '/x/..;/system/airgap/seal',
    '/system/airgap/seal',
    '/system/airgap/seal',
  ],
  ['/x/;y/seal', '/x/;y/seal', '/x/;y/seal', '/x/seal', '/x/seal'],
  [
    '/system/airgap/%73eal',
    '/system/airgap/seal',
    '/system/airgap/seal',
    '/system/airgap/seal',
    '/system/airgap/seal',
  ],
  [
    '/system/airgap/%2e%2E/airgap/seal',
    '/system/airgap/seal',
    '/system/airgap/seal',
    '/system/airgap/seal',
    '/system/airgap/seal',
  ],
  ['/x/.%2e/system', '/system', '/system', '/system', '/system'],
  [
    '/SYSTEM/AIRGAP/SEAL',
    '/SYSTEM/AIRGAP/SEAL',
    '/SYSTEM/AIRGAP/SEAL',
    '/SYSTEM/AIRGAP/SEAL',
    '/SYSTEM/AIRGAP/SEAL',
  ],
  [
    '//system//airgap///seal/',
    '/system/airgap/seal/',
    '/system/airgap/seal/',
    '/system/airgap/seal/',
    '/system/airgap/seal/',
  ],
  [
    '/../../system/./airgap/seal',
    '/system/airgap/seal',
    '/system/airgap/seal',
    '/system/airgap/seal',
    '/system/airgap/seal',
  ],
  [
    '/system/airgap/%252Fseal',
    '/system/airgap/%252Fseal',
    '/system/airgap/%252Fseal',
    '/system/airgap/%252Fseal',
    '/system/airgap/%252Fseal',
  ],
  [
    'http://gw/system/airgap/seal',
    '!not_origin_form',
    '!not_origin_form',
    '!not_origin_form',
    '!not_origin_form',
  ],
  ['*', '!not_origin_form', '!not_origin_form', '!not_origin_form', '!not_origin_form'],
  ['', '!not_origin_form', '!not_origin_form', '!not_origin_form', '!not_origin_form'],
  ['system/airgap/seal', '!not_origin_form', '!not_origin_form', '!not_origin_form', '!not_origin_form'],
  ['\\system', '!not_origin_form', '!not_origin_form', '!not_origin_form', '!not_origin_form'],
  [
    '/seal%',
    '!bad_percent_encoding',
    '!bad_percent_encoding',
    '!bad_percent_encoding',
    '!bad_percent_encoding',
  ],
  [
    '/seal%2',
    '!bad_percent_encoding',
    '!bad_percent_encoding',
    '!bad_percent_encoding',
    '!bad_percent_encoding',
  ],
  [
    '/%zzseal',
    '!bad_percent_encoding',
    '!bad_percent_encoding',
    '!bad_percent_encoding',
    '!bad_percent_encoding',
  ],
  [
    '/%%32%46',
    '!bad_percent_encoding',
    '!bad_percent_encoding',
    '!bad_percent_encoding',
    '!bad_percent_encoding',
  ],
  ['/a b', '!control_character', '!control_character', '!control_character', '!control_character'],
  ['/a\tb', '!control_character', '!control_character', '!control_character', '!control_character'],
  ['/a\u007f', '!control_character', '!control_character', '!control_character', '!control_character'],
  ['/a?b\nc', '!control_character', '!control_character', '!control_character', '!control_character'],
  ['/a\u0000', '!control_character', '!control_character', '!control_character', '!control_character'],
  ['/caf\u00e9', '!non_ascii', '!non_ascii', '!non_ascii', '!non_ascii'],
  // Encoded control characters: a NUL ends the path in C servers, an encoded CR LF splits headers in some.
  ...['/seal%00', '/seal%0d%0aX-Injected:%201', '/seal%7F', '/a%1fb', '/%00/seal'].map(
    (t) =>
      [
        t,
        '!encoded_control_character',
        '!encoded_control_character',
        '!encoded_control_character',
        '!encoded_control_character',
      ] as const,
  ),
  // An encoded space is no control character.
  ['/a%20b', '/a%20b', '/a%20b', '/a%20b', '/a%20b'],
];

describe('known bypass shapes', () => {
  it.each(ATTACKS)('%j: reject %j, decode %j, strip %j, decode+strip %j', (target, r, d, s, ds) => {
    expect(outcome(reject(target))).toBe(r);
    expect(outcome(decode(target))).toBe(d);
    expect(outcome(strip(target))).toBe(s);
    expect(outcome(decodeStrip(target))).toBe(ds);
  });

  it('refuses with frozen constants that carry a sentence for a problem body', () => {
    const a = reject('/x#y');
    const b = reject('/z#w');
    expect(a).toBe(b);
    expect(Object.isFrozen(a)).toBe(true);
    for (const [code, refusal] of Object.entries(TARGET_REFUSALS)) {
      expect(refusal.code).toBe(code);
      expect(refusal.ok).toBe(false);
      expect(refusal.detail).toMatch(/^The request .+\.$/);
      expect(refusal.detail).not.toMatch(/[\u2013\u2014]/);
      expect(Object.isFrozen(refusal)).toBe(true);
    }
  });
});

describe('path parameters', () => {
  const byDefault = compileTargetCanonicalizer();
  it.each([
    '/system/airgap/seal;x=1',
    '/system/airgap/seal;',
    '/system;jsessionid=1/airgap/seal',
    '/x/..;/system/airgap/seal',
    '/system/airgap/seal;x?y=1',
  ])(
    'refuses %j by default: servlet containers route it without the parameter, Node routers with it',
    (t) => {
      expect(byDefault(t)).toBe(TARGET_REFUSALS.path_parameter);
      expect(canonicalPath(t)).toBe(TARGET_REFUSALS.path_parameter);
    },
  );

  it('accepts a ; in the query, an encoded %3B, and removes parameters with strip', () => {
    expect(outcome(byDefault('/a?b=1;c=2'))).toBe('/a?b=1;c=2');
    expect(outcome(byDefault('/a%3Bb'))).toBe('/a%3Bb');
    expect(outcome(strip('/system/airgap/seal;x=1'))).toBe('/system/airgap/seal');
    expect(outcome(reject('/system/airgap/seal;x=1'))).toBe('/system/airgap/seal;x=1');
  });
});

describe('canonicalPath', () => {
  it('returns the very same string when the path is canonical already', () => {
    for (const p of ['/', '/system/airgap/seal', '/.well-known/x', '/a/b/', '/a?x=%2f//;y', '/%C3%A9']) {
      expect(canonicalPath(p)).toBe(p);
      expect(reject.path(p)).toBe(p);
    }
    expect(reject.path('/a;b')).toBe('/a;b');
  });

  it('canonicalizes the path and keeps the query', () => {
    expect(canonicalPath('/a//%62/../c?q=%2f')).toBe('/a/c?q=%2f');
    expect(decode.path('/a%2Fb')).toBe('/a/b');
    expect(canonicalPath('/a%2Fb')).toBe(TARGET_REFUSALS.encoded_separator);
  });
});

describe('options', () => {
  it('are validated once, with the option path in the message', () => {
    const bad: [unknown, RegExp][] = [
      [{ encodedSlashes: 'allow' }, /target\.encodedSlashes must be one of reject, decode, got "allow"/],
      [{ pathParameters: true }, /target\.pathParameters must be one of reject, strip, keep, got true/],
      [{ encodedSlash: 'decode' }, /target\.encodedSlash must be one of the known options/],
      ['decode', /target must be an object/],
    ];
    for (const [options, message] of bad) {
      let error: unknown;
      try {
        compileTargetCanonicalizer(options as TargetOptions);
      } catch (e) {
        error = e;
      }
      expect(error).toBeInstanceOf(SluiceError);
      expect((error as SluiceError).code).toBe('ERR_INVALID_OPTION');
      expect((error as SluiceError).message).toMatch(message);
    }
    expect(() => compileTargetCanonicalizer({ encodedSlashes: 'x' } as never, 'gateway.target')).toThrow(
      /gateway\.target\.encodedSlashes/,
    );
  });

  it('resolve to frozen values and a frozen function', () => {
    expect(compileTargetCanonicalizer().options).toEqual({
      encodedSlashes: 'reject',
      pathParameters: 'reject',
    });
    expect(reject.options).toEqual({ encodedSlashes: 'reject', pathParameters: 'keep' });
    expect(Object.isFrozen(reject)).toBe(true);
    expect(Object.isFrozen(reject.options)).toBe(true);
    expect(decodeStrip.options).toEqual({ encodedSlashes: 'decode', pathParameters: 'strip' });
  });
});

// Properties over targets built from the pieces attacks are made of.
const piece = fc.constantFrom(
  'a',
  'A',
  'seal',
  'SeAl',
  '.',
  '..',
  '%2e',
  '%2E',
  '%2e%2E',
  '.%2e',
  '%2F',
  '%2f',
  '%5C',
  '%5c',
  '\\',
  ';',
  ';x',
  ';x=1',
  '%3B',
  '%73',
  '%7e',
  '%25',
  '%252F',
  '%c3%a9',
  '%00',
  '%',
  '%z',
  '~',
  '-',
  '_',
  '/',
  '//',
  '?',
  '?q=%2f',
  '#',
  ' ',
  '\u00e9',
);
const target = fc.oneof(
  { weight: 4, arbitrary: fc.array(piece, { maxLength: 12 }).map((parts) => `/${parts.join('')}`) },
  { weight: 1, arbitrary: fc.string({ maxLength: 20 }) },
  { weight: 1, arbitrary: fc.string({ unit: 'binary-ascii', maxLength: 20 }).map((s) => `/${s}`) },
);
const modes: readonly (readonly [string, ReturnType<typeof compileTargetCanonicalizer>])[] = [
  ['reject', reject],
  ['decode', decode],
  ['strip', strip],
  ['decode+strip', decodeStrip],
  ['default', compileTargetCanonicalizer()],
];
const UNRESERVED_HEX = /%(2[DdEe]|3[0-9]|4[1-9A-Fa-f]|5[0-9AaFf]|6[1-9A-Fa-f]|7[0-9AaEe])/;

/** Decodes every %XX once, byte by byte (latin1), as a naive upstream would. */
function decodeOnce(s: string): string {
  return s.replace(/%([0-9A-F]{2})/g, (_m, h: string) => String.fromCharCode(Number.parseInt(h, 16)));
}

describe('properties', () => {
  it('answer a sequence of calls, the same target repeated or not, as separate canonicalizers answer each alone', () => {
    fc.assert(
      fc.property(fc.array(fc.tuple(target, fc.boolean(), fc.boolean()), { maxLength: 12 }), (calls) => {
        for (const [mode, canon] of modes) {
          const options = canon.options;
          let previous = '';
          for (const [fresh, repeat, asPath] of calls) {
            // A repeated target is often a copy, not the same string: the gateway's id header and its URL are.
            const t = repeat ? previous.split('').join('') : fresh;
            previous = t;
            const alone = compileTargetCanonicalizer(options);
            if (asPath) expect(canon.path(t), mode).toEqual(alone.path(t));
            else expect(canon(t), mode).toEqual(alone(t));
          }
        }
      }),
      { numRuns: 500, seed: 20_261_207 },
    );
  });

  it('never throw, and accept only origin-form paths that are canonical and stable', () => {
    fc.assert(
      fc.property(target, (t) => {
        for (const [mode, canon] of modes) {
          const r = canon(t);
          if (!r.ok) {
            expect(Object.values(TARGET_REFUSALS)).toContain(r);
            continue;
          }
          const p = r.path;
          expect(p.startsWith('/'), mode).toBe(true);
          expect(p).not.toMatch(/\/\/|\/\.\/|\/\.\.\/|\/\.\.?$|[#\\?]/);
          expect(p).not.toMatch(UNRESERVED_HEX);
          expect(p).not.toMatch(/%(?![0-9A-F]{2})/);
          expect([...p].every((ch) => ch > ' ' && ch < '\u007f')).toBe(true);
          expect(r.query === '' || r.query.startsWith('?')).toBe(true);
          expect(t.endsWith(r.query)).toBe(true);
          if (mode.startsWith('decode')) expect(p).not.toMatch(/%2F|%5C/);
          if (mode.endsWith('strip') || mode === 'default') expect(p).not.toContain(';');
          // Idempotence: the output is a fixed point, and the path function hands back the same string.
          expect(canon(p + r.query)).toEqual(r);
          expect(canon.path(p + r.query)).toBe(p + r.query);
        }
      }),
      { numRuns: 2000, seed: 20_240_601 },
    );
  });

  it('leave nothing for an upstream decoding once to turn into a separator or dot segment (reject mode)', () => {
    fc.assert(
      fc.property(target, (t) => {
        for (const canon of [reject, strip]) {
          const r = canon(t);
          if (!r.ok) continue;
          for (const segment of r.path.split('/')) {
            const plain = decodeOnce(segment);
            expect(plain).not.toMatch(/[/\\]/);
            expect(plain === '.' || plain === '..').toBe(false);
          }
        }
      }),
      { numRuns: 2000, seed: 7 },
    );
  });

  it('agree with the RFC 3986 reference remove_dot_segments on plain paths', () => {
    const seg = fc.constantFrom('a', 'b', 'C', '.', '..', 'x.y', '..z');
    fc.assert(
      fc.property(fc.array(seg, { minLength: 1, maxLength: 8 }), (segs) => {
        const path = `/${segs.join('/')}`;
        expect(reject(path)).toEqual({ ok: true, path: removeDotSegments(path), query: '' });
      }),
      { numRuns: 1000, seed: 11 },
    );
  });

  it('refuse each code for the reason it names', () => {
    const cases: Record<TargetRefusalCode, string> = {
      fragment: '/a#',
      encoded_separator: '/a%2f',
      backslash: '/a\\',
      bad_percent_encoding: '/a%g0',
      not_origin_form: 'a',
      control_character: '/\r',
      encoded_control_character: '/a%00',
      non_ascii: '/\u2028',
      path_parameter: '/a;b',
    };
    const byDefault = compileTargetCanonicalizer();
    for (const [code, t] of Object.entries(cases)) expect(outcome(byDefault(t))).toBe(`!${code}`);
  });
});

/** RFC 3986 5.2.4, written out literally from the specification's steps (input without empty segments). */
function removeDotSegments(input: string): string {
  let inBuf = input;
  let out = '';
  while (inBuf.length > 0) {
    if (inBuf.startsWith('../')) inBuf = inBuf.slice(3);
    else if (inBuf.startsWith('./')) inBuf = inBuf.slice(2);
    else if (inBuf.startsWith('/./')) inBuf = inBuf.slice(2);
    else if (inBuf === '/.') inBuf = '/';
    else if (inBuf.startsWith('/../')) {
      inBuf = inBuf.slice(3);
      out = out.slice(0, Math.max(0, out.lastIndexOf('/')));
    } else if (inBuf === '/..') {
      inBuf = '/';
      out = out.slice(0, Math.max(0, out.lastIndexOf('/')));
    } else if (inBuf === '.' || inBuf === '..') inBuf = '';
    else {
      const next = inBuf.indexOf('/', 1);
      const end = next < 0 ? inBuf.length : next;
      out += inBuf.slice(0, end);
      inBuf = inBuf.slice(end);
    }
  }
  return out === '' ? '/' : out;
}
