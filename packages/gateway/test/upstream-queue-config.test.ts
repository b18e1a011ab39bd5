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

function load(upstream: string) {
  return loadConfigText(`${BASE}upstream: ${upstream}\n`, join(tmp.dir, 'c.yaml'));
}

describe('upstream.queueTimeout and upstream.maxBodiesPerClient', () => {
  it('default to 5 s and a quarter of the connections', () => {
    const r = loadConfigText(BASE, join(tmp.dir, 'c.yaml'));
    expect(r.ok && r.config.upstream).toMatchObject({ queueTimeoutMs: 5_000, maxBodiesPerClient: 32 });
    const few = load('{ connections: 10 }');
    expect(few.ok && few.config.upstream.maxBodiesPerClient).toBe(2);
    // Never 0, which would turn the cap off: a pool of one to three connections allows one body per client.
    const one = load('{ connections: 3 }');
    expect(one.ok && one.config.upstream.maxBodiesPerClient).toBe(1);
  });

  it('read a duration and a whole number; 0 turns either off', () => {
    const r = load('{ queueTimeout: 250ms, maxBodiesPerClient: 7 }');
    expect(r.ok && r.config.upstream).toMatchObject({ queueTimeoutMs: 250, maxBodiesPerClient: 7 });
    const off = load('{ queueTimeout: 0, maxBodiesPerClient: 0 }');
    expect(off.ok && off.config.upstream).toMatchObject({ queueTimeoutMs: 0, maxBodiesPerClient: 0 });
  });

  it('refuse values out of range, naming the path, what is expected and what was given', () => {
    const cases: [string, string, string][] = [
      ['{ maxBodiesPerClient: -1 }', 'upstream.maxBodiesPerClient', 'must be >= 0, got -1'],
      ['{ maxBodiesPerClient: 1.5 }', 'upstream.maxBodiesPerClient', 'must be integer, got 1.5'],
      ['{ queueTimeout: soon }', 'upstream.queueTimeout', 'got "soon"'],
      [
        '{ queueTimeout: 3000000000ms }',
        'upstream.queueTimeout',
        'must be at most 2147483647ms (the longest timer Node.js sets), got "3000000000ms"',
      ],
    ];
    for (const [upstream, path, message] of cases) {
      const r = load(upstream);
      expect(r.ok, upstream).toBe(false);
      const v = r.violations.find((x) => x.path === path);
      expect(v?.message, upstream).toContain(message);
    }
  });
});
