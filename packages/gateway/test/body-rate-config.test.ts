import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { loadConfigText } from '../src/config/load-config.js';
import { tempDir } from './support.js';

const tmp = tempDir();
afterAll(() => tmp.cleanup());

const BASE = `rateLimiting:
  defaultTier: standard
  tiers:
    standard: { requestsPerMinute: 300, burstLimit: 50 }
`;

function load(server: string) {
  return loadConfigText(`${BASE}server: ${server}\n`, join(tmp.dir, 'c.yaml'));
}

describe('server.bodyTimeout and server.bodyMinRate', () => {
  it('default to 20 s and 500 bytes per second', () => {
    const r = loadConfigText(BASE, join(tmp.dir, 'c.yaml'));
    expect(r.ok && r.config.server).toMatchObject({ bodyTimeoutMs: 20_000, bodyMinRate: 500 });
  });

  it('read a duration and a whole number of bytes per second; 0 is allowed for both', () => {
    const r = load('{ bodyTimeout: 1m, bodyMinRate: 0 }');
    expect(r.ok && r.config.server).toMatchObject({ bodyTimeoutMs: 60_000, bodyMinRate: 0 });
    const off = load('{ bodyTimeout: 0 }');
    expect(off.ok && off.config.server.bodyTimeoutMs).toBe(0);
  });

  it('refuse values out of range, naming the path, what is expected and what was given', () => {
    const cases: [string, string, string][] = [
      ['{ bodyMinRate: -1 }', 'server.bodyMinRate', 'must be >= 0, got -1'],
      ['{ bodyMinRate: 1.5 }', 'server.bodyMinRate', 'must be integer, got 1.5'],
      ['{ bodyMinRate: "fast" }', 'server.bodyMinRate', 'must be integer, got "fast"'],
      ['{ bodyTimeout: soon }', 'server.bodyTimeout', 'got "soon"'],
      [
        '{ bodyTimeout: 3000000000ms }',
        'server.bodyTimeout',
        'must be at most 2147483647ms (the longest timer Node.js sets), got "3000000000ms"',
      ],
    ];
    for (const [server, path, message] of cases) {
      const r = load(server);
      expect(r.ok, server).toBe(false);
      const v = r.violations.find((x) => x.path === path);
      expect(v?.message, server).toContain(message);
    }
  });
});
