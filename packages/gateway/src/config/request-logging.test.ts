import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { tempDir } from '../../test/support.js';
import { loadConfigText } from './load-config.js';

const tmp = tempDir();
afterAll(() => tmp.cleanup());

const BASE = `rateLimiting:
  defaultTier: standard
  tiers:
    standard: { requestsPerMinute: 300 }
`;

function load(logging: string) {
  return loadConfigText(`${BASE}${logging}`, join(tmp.dir, 'c.yaml'));
}

function requestsOf(logging: string) {
  const r = load(logging);
  expect(r.ok ? [] : r.violations).toEqual([]);
  return r.config?.logging.requests;
}

describe('logging.requests', () => {
  it('defaults to every request at level info or finer, to none where the level hid request lines', () => {
    expect(requestsOf('')).toEqual({ mode: 'all', share: 1 });
    expect(requestsOf('logging: { level: debug }\n')).toEqual({ mode: 'all', share: 1 });
    expect(requestsOf('logging: { level: warn }\n')).toEqual({ mode: 'none', share: 0 });
    expect(requestsOf('logging: { level: silent }\n')).toEqual({ mode: 'none', share: 0 });
  });

  it('reads all, denied, none and a share of the other requests, whatever the level', () => {
    expect(requestsOf('logging: { level: warn, requests: all }\n')).toEqual({ mode: 'all', share: 1 });
    expect(requestsOf('logging: { requests: denied }\n')).toEqual({ mode: 'denied', share: 0 });
    expect(requestsOf('logging: { level: debug, requests: none }\n')).toEqual({ mode: 'none', share: 0 });
    expect(requestsOf('logging: { requests: 5% }\n')).toEqual({ mode: 'sample', share: 0.05 });
    expect(requestsOf('logging: { requests: 0.25% }\n')).toEqual({ mode: 'sample', share: 0.0025 });
    expect(requestsOf('logging: { requests: 100% }\n')).toEqual({ mode: 'all', share: 1 });
  });

  it('refuses other values at their line, naming what it takes', () => {
    const cases: [string, RegExp][] = [
      ['everything', /all, denied, none or a share.*got "everything"/],
      ['5', /got 5/],
      ['0%', /above 0% and at most 100%.*use none.*got "0%"/],
      ['150%', /above 0% and at most 100%.*got "150%"/],
      ['0.00001%', /above 0% and at most 100%.*got "0.00001%"/],
    ];
    for (const [value, message] of cases) {
      const r = load(`logging:\n  level: info\n  requests: ${value}\n`);
      expect(r.ok).toBe(false);
      if (r.ok) continue;
      expect(r.violations.map((v) => [v.line, v.path])).toEqual([[7, 'logging.requests']]);
      expect(r.violations[0].message).toMatch(message);
    }
  });
});
