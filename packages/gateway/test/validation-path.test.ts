import { join } from 'node:path';
import { Redis } from 'ioredis';
import { ManualClock } from 'sluice';
import { RedisStore } from 'sluice/redis';
import { afterAll, describe, expect, it } from 'vitest';
import { Runtime } from '../src/admission/runtime.js';
import { loadConfigText } from '../src/config/load-config.js';
import { MAX_THREADS } from '../src/config/value-ranges.js';
import type { Violation } from '../src/config/violation.js';
import { Gateway } from '../src/gateway/gateway.js';
import { createLogger } from '../src/log/create-logger.js';
import { tempDir } from './support.js';

/*
 * `sluice validate` and `sluice serve` read a file through one path (loadConfigText): whatever serve would refuse
 * or misread when it builds its stores, policies and timers must be a violation with its line and column first.
 */

const tmp = tempDir();
afterAll(() => tmp.cleanup());

const TIERS = `rateLimiting:
  defaultTier: standard
  tiers:
    standard: { requestsPerMinute: 300 }
`;

function load(yaml: string) {
  return loadConfigText(yaml, join(tmp.dir, 'c.yaml'), { env: {} });
}

function violations(yaml: string): Violation[] {
  const r = load(yaml);
  expect(r.ok).toBe(false);
  return [...r.violations];
}

const lines = (v: readonly Violation[]) => v.map((x) => `${x.line}:${x.column} ${x.path}: ${x.message}`);

describe('prototype-like names', () => {
  it.each(['constructor', 'toString', '__proto__', 'hasOwnProperty'])(
    'refuses defaultTier: %s as an undefined tier',
    (name) => {
      const v = violations(TIERS.replace('defaultTier: standard', `defaultTier: ${name}`));
      expect(lines(v)).toEqual([
        `2:16 rateLimiting.defaultTier: tier "${name}" is not defined; defined: standard`,
      ]);
    },
  );

  it('refuses __proto__ as a tier name at its key, instead of reading no tier', () => {
    const v = violations(`rateLimiting:
  defaultTier: standard
  tiers:
    __proto__: { requestsPerMinute: 5 }
    standard: { requestsPerMinute: 300 }
`);
    expect(lines(v)).toEqual([
      '4:5 rateLimiting.tiers.__proto__: "__proto__" is a reserved name (a property of every JavaScript object); choose another name',
    ]);
  });

  it('refuses constructor and toString as tier, class and tenant names', () => {
    const v = violations(`rateLimiting:
  defaultTier: constructor
  tiers:
    constructor: { requestsPerMinute: 5 }
ratelimit:
  toString: { per_minute: 3, burst: 3 }
`);
    expect(v.map((x) => `${x.line}:${x.column} ${x.path}`)).toEqual([
      '4:5 rateLimiting.tiers.constructor',
      '6:3 ratelimit.toString',
    ]);
  });

  it('refuses an endpoint rule named after an Object property', () => {
    const v = violations(`${TIERS}  endpoints:
    - { pattern: /a, limit: 3, window: 60s, name: valueOf }
`);
    expect(lines(v)).toEqual([
      '6:51 rateLimiting.endpoints[0].name: "valueOf" is a reserved name (a property of every JavaScript object); choose another name',
    ]);
  });
});

describe('policy names go into headers', () => {
  it.each([
    ['a CRLF', '"a\\r\\nb"'],
    ['a non-ASCII character', '"caf\u00e9"'],
    ['a trailing space', '"ab "'],
  ])('refuses an endpoint name with %s', (_, name) => {
    const v = violations(`${TIERS}  endpoints:
    - { pattern: /a, limit: 3, window: 60s, name: ${name} }
`);
    expect(v.map((x) => `${x.line}:${x.column} ${x.path}`)).toEqual(['6:51 rateLimiting.endpoints[0].name']);
    expect(v[0].message).toMatch(/^must be printable ASCII without leading or trailing spaces/);
  });

  it('refuses a pattern with a non-ASCII character when it names the policy', () => {
    const v = violations(`${TIERS}  endpoints:
    - { pattern: "/caf\u00e9", limit: 3, window: 60s }
`);
    expect(v.map((x) => x.path)).toEqual(['rateLimiting.endpoints[0].pattern']);
  });
});

describe('value ranges', () => {
  const timers: [string, string][] = [
    ['server.shutdownTimeout', 'server: { shutdownTimeout: 3000000s }'],
    ['ratelimit.sweep_interval', 'ratelimit: { sweep_interval: 3000000s }'],
    ['upstream.connectTimeout', 'upstream: { connectTimeout: 3000000s }'],
    ['upstream.responseTimeout', 'upstream: { responseTimeout: 3000000s }'],
    ['upstream.bodyTimeout', 'upstream: { bodyTimeout: 2147483648ms }'],
  ];
  it.each(timers)('refuses %s of 2^31 ms or more (a Node.js timer cannot wait that long)', (path, yaml) => {
    const v = violations(`${TIERS}${yaml}\n`);
    expect(v.map((x) => `${x.line} ${x.path}`)).toEqual([`5 ${path}`]);
    expect(v[0].message).toMatch(/^must be at most 2147483647ms \(the longest timer Node\.js sets\), got /);
    expect(v[0].column).toBeGreaterThan(1);
  });

  it('accepts the longest timer', () => {
    const r = load(
      `${TIERS}server: { shutdownTimeout: 2147483647ms }\nratelimit: { sweep_interval: 2147483s }\n`,
    );
    if (!r.ok) throw new Error(JSON.stringify(r.violations));
    expect(r.config.server.shutdownTimeoutMs).toBe(2 ** 31 - 1);
  });

  it('refuses a queue whose maxWait exceeds a timer', () => {
    const v = violations(`rateLimiting:
  defaultTier: standard
  tiers:
    standard: { requestsPerMinute: 300, queue: { limit: 3, maxWait: 3000000s } }
`);
    expect(v.map((x) => x.path)).toEqual(['rateLimiting.tiers.standard.queue.maxWait']);
  });

  it.each(['0', '0.4ms', '999999999s', '61s'])('refuses store.timeout: %s (1ms to 60s)', (value) => {
    const v = violations(`${TIERS}store:\n  type: redis\n  url: redis://127.0.0.1:1\n  timeout: ${value}\n`);
    expect(lines(v)).toEqual([
      `8:12 store.timeout: must be between 1ms and 60s, got ${JSON.stringify(value === '0' ? 0 : value)}`,
    ]);
  });

  it('refuses max_tracked_keys above the table threads share (67108864), whatever the thread count', () => {
    const v = violations(`${TIERS}ratelimit:\n  max_tracked_keys: 1000000000000\n`);
    expect(lines(v)).toEqual(['6:21 ratelimit.max_tracked_keys: must be <= 67108864, got 1000000000000']);
  });

  it('refuses store.nodeCount beyond what the Redis store divides by', () => {
    const v = violations(`${TIERS}store: { type: redis, url: "redis://127.0.0.1:1", nodeCount: 1000000 }\n`);
    expect(v.map((x) => x.path)).toEqual(['store.nodeCount']);
  });
});

describe('addresses serve would not parse', () => {
  it.each([
    ['upstream.url', 'upstream: { url: "http://" }'],
    ['upstream.url', 'upstream: { url: "http://a b:1" }'],
    ['identity.jwt.jwksUrl', 'identity: { jwt: { jwksUrl: "https://" } }'],
    ['store.url', 'store: { type: redis, url: "redis://a b" }'],
    [
      'store.cluster.nodes[1]',
      'store: { type: redis, cluster: { nodes: ["redis://127.0.0.1:7000", "redis://"] } }',
    ],
    ['quota.webhook.url', 'quota: { webhook: { url: "http://", secret: "0123456789abcdef0123" } }'],
  ])('refuses %s that is no URL with a host', (path, yaml) => {
    const v = violations(`${TIERS}${yaml}\n`);
    expect(v.map((x) => `${x.line} ${x.path}`)).toEqual([`5 ${path}`]);
    expect(v[0].message).toMatch(/^must be an absolute URL with a host/);
  });

  it('refuses { or } in keys.prefix on Redis, whose key layout reserves them for hash tags', () => {
    const v = violations(
      `${TIERS}store: { type: redis, url: "redis://127.0.0.1:1" }\nkeys: { prefix: "{x}" }\n`,
    );
    expect(v.map((x) => `${x.line} ${x.path}`)).toEqual(['6 keys.prefix']);
  });
});

describe('what validation accepts, serve builds', () => {
  // Every range at its edges: the stores, policies and the admission runtime serve builds must take them.
  const edges = [
    `${TIERS}ratelimit: { max_tracked_keys: 67108864, sweep_interval: 2147483647ms }
server: { shutdownTimeout: 2147483647ms }
upstream: { connectTimeout: 2147483647ms, responseTimeout: 0, bodyTimeout: 0 }
`,
    `${TIERS}store: { type: redis, url: "redis://127.0.0.1:1", timeout: 1ms, nodeCount: 1000 }\n`,
    `${TIERS}store: { type: redis, url: "redis://127.0.0.1:1", timeout: 60s }\n`,
    `rateLimiting:
  defaultTier: x.y-z_1
  tiers:
    x.y-z_1: { requestsPerMinute: 1, queue: { limit: 1, maxWait: 2147483647ms } }
  endpoints:
    - { pattern: /a, limit: 1, window: 1s, name: "a!~ z" }
ratelimit: { max_tracked_keys: 1, sweep_interval: 0 }
`,
  ];
  it.each(edges.map((y, i) => [i, y]))('edge configuration %i', async (_, yaml) => {
    const r = load(yaml);
    if (!r.ok) throw new Error(lines(r.violations).join('\n'));
    const c = r.config;
    // The table of sluice serve --threads is checked by its bound alone: allocating 2^26 slots here is no test.
    expect(c.maxTrackedKeys).toBeLessThanOrEqual(2 ** 26);
    if (c.store.type === 'redis') {
      const client = new Redis({ lazyConnect: true });
      const redis = new RedisStore({
        client,
        failureMode: c.store.failureMode,
        timeoutMs: c.store.timeoutMs,
        // Serve divides the local failure mode over every thread of the process.
        nodeCount: c.store.nodeCount * MAX_THREADS,
      });
      expect(() => new Runtime(c, redis)).not.toThrow();
      await redis.close();
      client.disconnect();
      return;
    }
    // The memory store's edges: serve itself, with every timer it sets, and no TimeoutOverflowWarning.
    const warnings: string[] = [];
    const onWarning = (w: Error) => warnings.push(w.name);
    process.on('warning', onWarning);
    try {
      const g = await Gateway.start({
        config: {
          ...c,
          server: { ...c.server, port: 0 },
          upstream: { ...c.upstream, url: 'http://127.0.0.1:1' },
        },
        watch: false,
        clock: new ManualClock(0),
        logger: createLogger('silent'),
      });
      await g.close();
      await new Promise((resolve) => setImmediate(resolve));
    } finally {
      process.off('warning', onWarning);
    }
    expect(warnings).toEqual([]);
  });
});
