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

describe('server.maxConnections and server.maxConnectionsPerClient', () => {
  it('default to a total derived at start (undefined here) and 256 connections per client', () => {
    const r = loadConfigText(BASE, join(tmp.dir, 'c.yaml'));
    expect(r.ok && r.config.server.maxConnections).toBeUndefined();
    expect(r.ok && r.config.server.maxConnectionsPerClient).toBe(256);
  });

  it('read whole numbers; 0 turns either cap off', () => {
    const r = load('{ maxConnections: 2000, maxConnectionsPerClient: 50 }');
    expect(r.ok && r.config.server).toMatchObject({ maxConnections: 2000, maxConnectionsPerClient: 50 });
    const off = load('{ maxConnections: 0, maxConnectionsPerClient: 0 }');
    expect(off.ok && off.config.server).toMatchObject({ maxConnections: 0, maxConnectionsPerClient: 0 });
  });

  it('refuse values out of range, naming the path, what is expected and what was given', () => {
    const cases: [string, string, string][] = [
      ['{ maxConnections: -1 }', 'server.maxConnections', 'must be >= 0, got -1'],
      ['{ maxConnections: 1.5 }', 'server.maxConnections', 'must be integer, got 1.5'],
      ['{ maxConnections: 2000000 }', 'server.maxConnections', 'must be <= 1000000, got 2000000'],
      [
        '{ maxConnectionsPerClient: "many" }',
        'server.maxConnectionsPerClient',
        'must be integer, got "many"',
      ],
      [
        '{ maxConnections: 100, maxConnectionsPerClient: 200 }',
        'server.maxConnectionsPerClient',
        'must be at most server.maxConnections (100), or 0 for no cap per client, got 200',
      ],
    ];
    for (const [server, path, message] of cases) {
      const r = load(server);
      expect(r.ok, server).toBe(false);
      const v = r.ok ? undefined : r.violations.find((x) => x.path === path);
      expect(v?.message, server).toContain(message);
    }
  });

  it('accept a per-client cap above the default total when the total is off', () => {
    const r = load('{ maxConnections: 0, maxConnectionsPerClient: 50000 }');
    expect(r.ok).toBe(true);
  });
});
