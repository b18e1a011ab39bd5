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

describe('upstream.queueTimeout, upstream.maxBodies and upstream.maxBodiesPerClient', () => {
  it('default to 5 s, half of the connections and a quarter of that', () => {
    const r = loadConfigText(BASE, join(tmp.dir, 'c.yaml'));
    expect(r.ok && r.config.upstream).toMatchObject({
      queueTimeoutMs: 5_000,
      maxBodies: 64,
      maxBodiesPerClient: 16,
    });
    const few = load('{ connections: 10 }');
    expect(few.ok && few.config.upstream).toMatchObject({ maxBodies: 5, maxBodiesPerClient: 1 });
    // Never 0, which would turn a cap off: a pool of one connection lets bodies have it, one per client.
    const one = load('{ connections: 1 }');
    expect(one.ok && one.config.upstream).toMatchObject({ maxBodies: 1, maxBodiesPerClient: 1 });
    // The share per client follows the share of bodies as configured, or the whole pool when it is off.
    const wide = load('{ connections: 100, maxBodies: 80 }');
    expect(wide.ok && wide.config.upstream.maxBodiesPerClient).toBe(20);
    const open = load('{ connections: 100, maxBodies: 0 }');
    expect(open.ok && open.config.upstream.maxBodiesPerClient).toBe(25);
  });

  it('read a duration and whole numbers; 0 turns any of them off', () => {
    const r = load('{ queueTimeout: 250ms, maxBodies: 9, maxBodiesPerClient: 7 }');
    expect(r.ok && r.config.upstream).toMatchObject({
      queueTimeoutMs: 250,
      maxBodies: 9,
      maxBodiesPerClient: 7,
    });
    const off = load('{ queueTimeout: 0, maxBodies: 0, maxBodiesPerClient: 0 }');
    expect(off.ok && off.config.upstream).toMatchObject({
      queueTimeoutMs: 0,
      maxBodies: 0,
      maxBodiesPerClient: 0,
    });
  });

  it('refuse values out of range, naming the path, what is expected and what was given', () => {
    const cases: [string, string, string][] = [
      ['{ maxBodiesPerClient: -1 }', 'upstream.maxBodiesPerClient', 'must be >= 0, got -1'],
      ['{ maxBodiesPerClient: 1.5 }', 'upstream.maxBodiesPerClient', 'must be integer, got 1.5'],
      ['{ maxBodies: -2 }', 'upstream.maxBodies', 'must be >= 0, got -2'],
      ['{ maxBodies: 0.5 }', 'upstream.maxBodies', 'must be integer, got 0.5'],
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
