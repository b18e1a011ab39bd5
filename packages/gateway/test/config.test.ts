import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { requirementFixture } from '../../../test/support/requirements.js';
import { loadConfigFile, loadConfigOrThrow, loadConfigText } from '../src/config/load-config.js';
import { configSchema } from '../src/config/schema.js';
import { formatViolations, type Violation } from '../src/config/violation.js';
import { tempDir } from './support.js';

const EXAMPLE = fileURLToPath(new URL('../examples/rate-limits.yaml', import.meta.url));
const tmp = tempDir();
afterAll(() => tmp.cleanup());

function violations(yaml: string, env: Record<string, string> = {}): Violation[] {
  const r = loadConfigText(yaml, join(tmp.dir, 'c.yaml'), { env });
  expect(r.ok).toBe(false);
  return [...r.violations];
}

const BASE = `rateLimiting:
  defaultTier: standard
  tiers:
    standard: { requestsPerMinute: 300, requestsPerHour: 10000, burstLimit: 50 }
`;

describe('the example configuration', () => {
  it('ships the example configuration verbatim', () => {
    expect(readFileSync(EXAMPLE, 'utf8')).toBe(requirementFixture('gateway-configuration.yaml'));
  });

  it('loads as written, with its tiers and endpoint rules', () => {
    const r = loadConfigFile(EXAMPLE);
    expect(r.violations).toEqual([]);
    const c = loadConfigOrThrow(EXAMPLE);
    expect(c.enabled).toBe(true);
    expect(c.defaultTier).toBe('standard');
    expect(c.tiers.free).toEqual({
      name: 'free',
      unlimited: false,
      perMinute: 60,
      burst: 10,
      perHour: 1000,
      shadow: false,
    });
    expect(c.tiers.standard).toEqual({
      name: 'standard',
      unlimited: false,
      perMinute: 300,
      burst: 50,
      perHour: 10000,
      shadow: false,
    });
    expect(c.tiers.enterprise).toEqual({
      name: 'enterprise',
      unlimited: false,
      perMinute: 1000,
      burst: 200,
      perHour: 50000,
      shadow: false,
    });
    expect(c.endpoints.map((e) => [e.pattern, e.limit, e.windowSeconds, e.burst])).toEqual([
      ['/api/risk/simulation/*', 30, 60, 30],
      ['/api/risk/simulation/studio/*', 10, 60, 10],
      ['/system/airgap/seal', 5, 3600, 5],
    ]);
    expect(c.exemptions.endpoints).toEqual([
      'GET /health',
      'GET /ready',
      'GET /metrics',
      'GET /.well-known/*',
    ]);
    expect(c.store.type).toBe('memory');
    expect(c.server).toMatchObject({ host: '127.0.0.1', port: 8080, mode: 'production' });
    expect(Object.isFrozen(c.tiers.free)).toBe(true);
  });

  it('is valid against the published JSON Schema file', () => {
    const schema = configSchema();
    expect(schema.$id).toMatch(/rate-limits\.schema\.json$/);
    expect(Object.keys(schema.properties as object)).toContain('rateLimiting');
  });
});

describe('violations', () => {
  it('reports every violation with its path and line, and suggests the key meant', () => {
    const v = violations(`rateLimiting:
  enabled: yes
  defaultTier: standrd
  tiers:
    standard:
      requestsPerMinute: 0
      burstLimt: 5
  endpoints:
    - pattern: "/a/*"
      limit: 3
      window: 60s
upstreem:
  url: http://127.0.0.1:1
`);
    expect(v.map((x) => [x.line, x.path])).toEqual([
      [2, 'rateLimiting.enabled'],
      [3, 'rateLimiting.defaultTier'],
      [6, 'rateLimiting.tiers.standard.requestsPerMinute'],
      [7, 'rateLimiting.tiers.standard.burstLimt'],
      [12, 'upstreem'],
    ]);
    expect(v[0].message).toBe('must be boolean, got "yes"');
    expect(v[1].message).toBe('tier "standrd" is not defined; defined: standard (did you mean "standard"?)');
    expect(v[2].message).toBe('must be >= 1, got 0');
    expect(v[3].message).toMatch(/^unknown key "burstLimt" \(did you mean "burstLimit"\?\)/);
    expect(v[4].message).toMatch(/^unknown key "upstreem" \(did you mean "upstream"\?\)/);
  });

  it('reports the cross-key checks with lines: default tier, windows, classes, store topology', () => {
    const v = violations(`rateLimiting:
  defaultTier: standrd
  tiers:
    standard: { requestsPerMinute: 10 }
  endpoints:
    - pattern: /a
      limit: 3
      window: 1500ms
    - pattern: /b
      class: rl.wrte
    - pattern: /c
ratelimit:
  rl.write: { per_minute: 120, burst: 30 }
store:
  type: redis
`);
    expect(v.map((x) => `${x.line} ${x.path}: ${x.message}`)).toEqual([
      '2 rateLimiting.defaultTier: tier "standrd" is not defined; defined: standard (did you mean "standard"?)',
      '8 rateLimiting.endpoints[0].window: must be a whole number of seconds of at least 1s, got "1500ms"',
      '10 rateLimiting.endpoints[1].class: class "rl.wrte" is not configured: add ratelimit.rl.wrte.per_minute and .burst (did you mean "rl.write"?)',
      '11 rateLimiting.endpoints[2]: missing required key "limit" (or name a "class")',
      '11 rateLimiting.endpoints[2]: missing required key "window", for example 60s (or name a "class")',
      '15 store: store type "redis" needs exactly one of url, cluster or sentinel, got none',
    ]);
  });

  it('reports YAML syntax errors with their line', () => {
    const v = violations('rateLimiting:\n  tiers: [\n');
    expect(v[0].message).toMatch(/^YAML: /);
    expect(v[0].line).toBeGreaterThan(0);
  });

  it('words a pattern violation from the schema description without a stray full stop', () => {
    const v = violations(`${BASE}  endpoints:\n    - { pattern: "api/x", limit: 5, window: 60s }\n`);
    const pattern = v.find((x) => x.path === 'rateLimiting.endpoints[0].pattern');
    expect(pattern?.message).toMatch(/^A path; .* everything below; got "api\/x"$/);
  });

  it('reports a missing endpoint pattern once', () => {
    const v = violations(`${BASE}  endpoints:\n    - limit: 5\n      window: 60s\n`);
    expect(v.map((x) => `${x.path}: ${x.message}`)).toEqual([
      'rateLimiting.endpoints[0]: missing required key "pattern"',
    ]);
  });

  it('rejects an empty or non-mapping file', () => {
    expect(violations('')[0].message).toMatch(/rateLimiting/);
    expect(violations('- a\n')[0].message).toMatch(/mapping/);
  });

  it('formats violations as file:line:column path: message', () => {
    const v = violations(`${BASE}  enabled: 3\n`);
    expect(formatViolations('x.yaml', v)).toBe('x.yaml:5:12 rateLimiting.enabled: must be boolean, got 3');
    // An empty file has no line to point at: no made-up position 0:0.
    expect(formatViolations('empty.yaml', violations(''))).toBe(
      'empty.yaml (file): missing required key "rateLimiting"',
    );
  });

  it('throws ERR_INVALID_CONFIG at start listing every violation', () => {
    const f = join(tmp.dir, 'bad.yaml');
    writeFileSync(f, `${BASE}  enabled: 3\nserver: { port: -1 }\n`);
    expect(() => loadConfigOrThrow(f)).toThrow(
      expect.objectContaining({
        code: 'ERR_INVALID_CONFIG',
        message: expect.stringMatching(
          /2 violations\):\n.*bad\.yaml:5:12 rateLimiting\.enabled.*\n.*bad\.yaml:6:/,
        ),
      }),
    );
  });
});

describe('the class form of the seed ticket', () => {
  it('reads ratelimit.<class>.per_minute and .burst, max_tracked_keys and sweep_interval', () => {
    const r = loadConfigText(
      `${BASE}  endpoints:
    - { pattern: /w/*, class: rl.write }
    - { pattern: /v/*, class: rl.write }
ratelimit:
  max_tracked_keys: 5000
  sweep_interval: 30s
  rl.write: { per_minute: 120, burst: 30 }
  rl.public_auth: { per_minute: 6, burst: 3 }
`,
      undefined,
    );
    if (!r.ok) throw new Error(JSON.stringify(r.violations));
    expect(r.config.maxTrackedKeys).toBe(5000);
    expect(r.config.sweepIntervalMs).toBe(30_000);
    expect(r.config.endpoints.map((e) => [e.name, e.limit, e.windowSeconds, e.burst])).toEqual([
      ['rl.write', 120, 60, 30],
      ['rl.write', 120, 60, 30],
    ]);
    expect(r.config.identity.publicAuth).toEqual({
      name: 'rl.public_auth',
      perMinute: 6,
      burst: 3,
      key: 'caller',
      scope: 'request',
    });
  });

  it('rejects zero values and a class combined with its own limits', () => {
    const v = violations(`${BASE}  endpoints:
    - { pattern: /w, class: rl.write, limit: 3 }
ratelimit:
  rl.write: { per_minute: 0, burst: 30 }
`);
    expect(v.map((x) => x.path)).toEqual([
      'rateLimiting.endpoints[0].limit',
      'ratelimit["rl.write"].per_minute',
    ]);
  });
});

describe('environment variables', () => {
  it('substitutes environment references with and without a default, typed when unquoted, and reports missing ones by line', () => {
    const yaml = `${BASE}server:
  port: \${PORT}
  host: "\${HOST:-127.0.0.1}"
upstream:
  url: http://\${UP_HOST}:9000/base
admin:
  token: \${ADMIN_TOKEN}
`;
    const ok = loadConfigText(yaml, undefined, {
      env: { PORT: '9099', UP_HOST: 'localhost', ADMIN_TOKEN: 'x'.repeat(20) },
    });
    if (!ok.ok) throw new Error(JSON.stringify(ok.violations));
    expect(ok.config.server.port).toBe(9099);
    expect(ok.config.server.host).toBe('127.0.0.1');
    expect(ok.config.upstream.url).toBe('http://localhost:9000/base');
    expect(ok.config.admin?.token).toBe('x'.repeat(20));
    const v = violations(yaml, { PORT: '1' });
    expect(v.map((x) => `${x.line} ${x.path}`)).toEqual(['9 upstream.url', '11 admin.token']);
    expect(v[0].message).toBe(
      // biome-ignore lint/suspicious/noTemplateCurlyInString: the message shows the YAML syntax literally
      'environment variable UP_HOST is not set (write ${UP_HOST:-default} for a default)',
    );
  });

  it('flags win over the file', () => {
    const r = loadConfigText(
      `${BASE}server: { port: 1234, host: 0.0.0.0 }\nupstream: { url: "http://a:1" }\n`,
      undefined,
      {
        overrides: { port: 0, host: '::1', upstream: 'http://127.0.0.1:5' },
      },
    );
    if (!r.ok) throw new Error(JSON.stringify(r.violations));
    expect([r.config.server.port, r.config.server.host, r.config.upstream.url]).toEqual([
      0,
      '::1',
      'http://127.0.0.1:5',
    ]);
  });
});

describe('exact arithmetic bounds', () => {
  it('refuses capacities the engine cannot hold exactly, with their path', () => {
    const v = violations(`rateLimiting:
  defaultTier: t
  tiers:
    t: { requestsPerMinute: 10, requestsPerHour: 10000000000 }
  endpoints:
    - { pattern: /a, limit: 10, burst: 999999999999, window: 3600s }
`);
    expect(v.map((x) => `${x.line} ${x.path}`)).toEqual([
      '4 rateLimiting.tiers.t.requestsPerHour',
      '6 rateLimiting.endpoints[0].burst',
    ]);
    expect(v[0].message).toBe(
      'must be at most 2501999792 for a 3600 s window (exact token arithmetic), got 10000000000',
    );
  });
});

describe('extensions', () => {
  it('resolves relative files next to the config and reports missing ones', () => {
    const v = violations(`${BASE}identity:
  apiKeys: { file: keys.yaml }
  jwt: { jwksFile: jwks.json, jwksUrl: "http://127.0.0.1:1/jwks" }
`);
    expect(v.map((x) => `${x.line} ${x.path}`)).toEqual([
      '6 identity.apiKeys.file',
      '7 identity.jwt',
      '7 identity.jwt.jwksFile',
    ]);
    expect(v[0].message).toBe(`file not found: ${join(tmp.dir, 'keys.yaml')}`);
  });

  it('checks trusted proxies, exemption patterns and the mTLS prerequisites', () => {
    const v = violations(`${BASE}server:
  trustedProxies: [loopback, "10.0.0.0/33"]
exemptions:
  endpoints: ["GET /ok", "GET /a//b"]
  mtls: { allowedSubjects: [billing] }
`);
    expect(v.map((x) => `${x.line} ${x.path}`)).toEqual([
      '6 server.trustedProxies[1]',
      '8 exemptions.endpoints[1]',
      '9 exemptions.mtls',
    ]);
  });
});
