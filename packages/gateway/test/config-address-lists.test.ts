import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { loadConfigText } from '../src/config/load-config.js';
import { tempDir } from './support.js';

const tmp = tempDir();
afterAll(() => tmp.cleanup());

const TIERS = `rateLimiting:
  defaultTier: f
  tiers:
    f: { requestsPerMinute: 10 }
`;

const paths = (yaml: string) => {
  const r = loadConfigText(yaml, join(tmp.dir, 'c.yaml'), {});
  expect(r.ok).toBe(false);
  return r.violations.map((v) => v.path);
};

describe('address lists', () => {
  it('reports every bad address of server.trustedProxies with its path', () => {
    const yaml = `server:\n  trustedProxies: ["10.0.0.0/8", "notanip", "1.2.3.4/99", loopback]\n${TIERS}`;
    expect(paths(yaml)).toEqual(['server.trustedProxies[1]', 'server.trustedProxies[2]']);
  });

  it('reports every bad address of decision.allowedPeers with its path', () => {
    const yaml = `decision:\n  allowedPeers: ["x", "1.2.3.4/40", "127.0.0.1"]\n${TIERS}`;
    expect(paths(yaml)).toEqual(['decision.allowedPeers[0]', 'decision.allowedPeers[1]']);
  });
});
