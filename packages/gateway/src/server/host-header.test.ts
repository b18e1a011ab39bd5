import { describe, expect, it } from 'vitest';
import { hasBadHost, isValidHost } from './host-header.js';

describe('hasBadHost', () => {
  it('accepts one Host field among others, and none', () => {
    expect(hasBadHost(['Host', 'a', 'Accept', '*/*', 'Hosts', 'x', 'X-Host', 'y'])).toBe(false);
    expect(hasBadHost(['Accept', '*/*'])).toBe(false);
    expect(hasBadHost([])).toBe(false);
  });

  it('refuses two Host fields whatever their case and values', () => {
    expect(hasBadHost(['Host', 'a', 'Host', 'b'])).toBe(true);
    expect(hasBadHost(['host', 'a', 'Accept', '*/*', 'HOST', 'a'])).toBe(true);
    expect(hasBadHost(['hOsT', 'a', 'Host', ''])).toBe(true);
  });

  it('refuses one Host field with an invalid value', () => {
    expect(hasBadHost(['Host', 'a b'])).toBe(true);
    expect(hasBadHost(['Accept', '*/*', 'host', 'user@a'])).toBe(true);
  });
});

describe('isValidHost', () => {
  it('accepts a host and an optional port', () => {
    for (const v of [
      '',
      'a',
      'example.com',
      'example.com:8080',
      'a:',
      '127.0.0.1:1',
      'a_b-c~d',
      'xn--bcher-kva.example',
    ]) {
      expect(isValidHost(v), v).toBe(true);
    }
  });

  it('accepts bracketed IP literals with an optional port', () => {
    for (const v of ['[::1]', '[::1]:80', '[2001:db8::1]', '[fe80::1%25eth0]', '[v1.x]']) {
      expect(isValidHost(v), v).toBe(true);
    }
  });

  it('refuses userinfo, paths, spaces, quotes, a bad port, an unclosed or empty literal and non-ASCII', () => {
    for (const v of [
      'user@a',
      'a/b',
      'a?b',
      'a#b',
      'a b',
      'a"b',
      'a\\b',
      'a:80x',
      'a:1:2',
      '::1',
      '[::1',
      '[]',
      '[::1]x',
      'caf\u00e9',
    ]) {
      expect(isValidHost(v), v).toBe(false);
    }
  });
});
