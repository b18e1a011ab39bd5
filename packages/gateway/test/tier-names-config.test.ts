import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { loadConfigText } from '../src/config/load-config.js';
import { tempDir } from './support.js';

// A tier's buckets are policies named after it (`free`, `free.hour`, `free.concurrent`), and the limiter files
// policies by name: a tier named like another policy would share that policy's bucket instead of having its own.

const tmp = tempDir();
afterAll(() => tmp.cleanup());

function lines(yaml: string): string[] {
  const r = loadConfigText(yaml, join(tmp.dir, 'c.yaml'), { env: {} });
  return r.violations.map((v) => `${v.line} ${v.path}: ${v.message}`);
}

describe('tier names', () => {
  it("refuses a tier named like another tier's generated policies, every one at once", () => {
    expect(
      lines(`rateLimiting:
  defaultTier: free
  tiers:
    free: { requestsPerMinute: 60, requestsPerHour: 1000, concurrentRequests: 2 }
    free.concurrent: { requestsPerMinute: 3 }
    free.hour: { requestsPerMinute: 4 }
    gold: { requestsPerMinute: 60 }
    gold.hour: { requestsPerMinute: 5 }
`),
    ).toEqual([
      '5 rateLimiting.tiers["free.concurrent"]: tier name "free.concurrent" is already the concurrency policy of tier "free"; choose another name',
      '6 rateLimiting.tiers["free.hour"]: tier name "free.hour" is already the per-hour policy of tier "free"; choose another name',
      '8 rateLimiting.tiers["gold.hour"]: tier name "gold.hour" is already the per-hour policy of tier "gold"; choose another name',
    ]);
  });

  it('refuses a tier named like the failed-credentials bucket, a catalogue class or a configured class', () => {
    expect(
      lines(`rateLimiting:
  defaultTier: free
  tiers:
    free: { requestsPerMinute: 60 }
    rl.public_auth: { requestsPerMinute: 100000, burstLimit: 100000 }
    rl.read: { requestsPerMinute: 10 }
    mine: { requestsPerMinute: 10 }
ratelimit:
  mine: { per_minute: 5, burst: 5 }
`),
    ).toEqual([
      '5 rateLimiting.tiers["rl.public_auth"]: tier name "rl.public_auth" is already the policy of the failed-credentials bucket; choose another name',
      '6 rateLimiting.tiers["rl.read"]: tier name "rl.read" is already a class of catalogue "standard"; choose another name',
      '7 rateLimiting.tiers.mine: tier name "mine" is already the policy of class "mine"; choose another name',
    ]);
  });

  it('refuses a tier named like the configured failed-credentials class', () => {
    expect(
      lines(`rateLimiting:
  defaultTier: free
  tiers:
    free: { requestsPerMinute: 60 }
    logins: { requestsPerMinute: 10 }
identity:
  publicAuthClass: logins
ratelimit:
  logins: { per_minute: 5, burst: 5 }
`),
    ).toEqual([
      '5 rateLimiting.tiers.logins: tier name "logins" is already the policy of the failed-credentials bucket; choose another name',
    ]);
  });

  it("refuses an endpoint rule named like a tier's concurrency policy, as its hour policy already is", () => {
    expect(
      lines(`rateLimiting:
  defaultTier: free
  tiers:
    free: { requestsPerMinute: 60, concurrentRequests: 2 }
  endpoints:
    - { pattern: /a, limit: 5, window: 60s, name: free.concurrent }
    - { pattern: /b, limit: 5, window: 60s, name: free.hour }
`),
    ).toEqual([
      `6 rateLimiting.endpoints[0].name: policy name "free.concurrent" is already a tier's policy name`,
      `7 rateLimiting.endpoints[1].name: policy name "free.hour" is already a tier's policy name`,
    ]);
  });

  it('keeps accepting dotted tier names that are no policy of another tier', () => {
    expect(
      lines(`rateLimiting:
  defaultTier: free
  tiers:
    free: { requestsPerMinute: 60, requestsPerHour: 1000 }
    free.trial: { requestsPerMinute: 3 }
    pro.hourly: { requestsPerMinute: 3 }
`),
    ).toEqual([]);
  });
});
