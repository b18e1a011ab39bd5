import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import fc from 'fast-check';
import { afterAll, describe, expect, it } from 'vitest';
import { main } from '../src/cli/main.js';
import {
  type ConfigWarning,
  checkConfig,
  configWarnings,
  WarningCode,
} from '../src/config/config-warnings.js';
import { loadConfigFile, loadConfigText } from '../src/config/load-config.js';
import { createLogger } from '../src/log/create-logger.js';
import { logConfigWarnings } from '../src/log/log-config-warnings.js';
import { tempDir } from './support.js';

const EXAMPLE = fileURLToPath(new URL('../examples/rate-limits.yaml', import.meta.url));
const tmp = tempDir();
afterAll(() => tmp.cleanup());

const BASE = `rateLimiting:
  defaultTier: free
  tiers:
    free: { requestsPerMinute: 60 }
`;

function warnings(yaml: string): ConfigWarning[] {
  const r = loadConfigText(yaml, join(tmp.dir, 'w.yaml'));
  expect(r.violations).toEqual([]);
  return [...r.warnings];
}

const codes = (yaml: string) => warnings(yaml).map((w) => `${w.code} ${w.path}`);

describe('configuration warnings', () => {
  it('finds none in the example configuration', () => {
    const r = loadConfigFile(EXAMPLE);
    expect(r.ok).toBe(true);
    expect(r.warnings).toEqual([]);
  });

  it('warns about an admin or decision listener reachable from other hosts without TLS', () => {
    const w = warnings(`${BASE}admin:
  host: 0.0.0.0
  token: admin-token-0123456789
decision:
  host: "::"
`);
    expect(w).toEqual([
      {
        code: 'W_ADMIN_PLAINTEXT_PUBLIC',
        path: 'admin.host',
        line: 6,
        column: 9,
        message: expect.stringMatching(/admin listener on 0\.0\.0\.0 .*without TLS/),
        suggestion: expect.stringMatching(/127\.0\.0\.1/),
      },
      {
        code: 'W_DECISION_PLAINTEXT_PUBLIC',
        path: 'decision.host',
        line: 9,
        column: 9,
        message: expect.stringMatching(/decision API on :: .*without TLS/),
        suggestion: expect.any(String),
      },
    ]);
    for (const host of ['127.0.0.1', '127.0.0.2', '::1', 'localhost', '::ffff:127.0.0.1'])
      expect(codes(`${BASE}admin: { host: "${host}", token: admin-token-0123456789 }\n`), host).toEqual([]);
    expect(codes(`${BASE}admin: { host: 10.1.2.3, token: admin-token-0123456789 }\n`)).toEqual([
      'W_ADMIN_PLAINTEXT_PUBLIC admin.host',
    ]);
  });

  it('warns about an Envoy rate limit service reachable from other hosts without TLS', () => {
    const envoy = (host: string) =>
      `${BASE}envoy:\n  host: "${host}"\n  domains: [{ domain: edge, descriptors: [] }]\n`;
    expect(warnings(envoy('0.0.0.0'))).toEqual([
      {
        code: 'W_ENVOY_PLAINTEXT_PUBLIC',
        path: 'envoy.host',
        line: 6,
        column: 9,
        message: expect.stringMatching(/rate limit service on 0\.0\.0\.0 .*without TLS.*limit overrides/),
        suggestion: expect.stringMatching(/envoy\.allowedPeers/),
      },
    ]);
    for (const host of ['127.0.0.1', '::1', 'localhost']) expect(codes(envoy(host)), host).toEqual([]);
  });

  it('warns about trusted proxies that cover every address, alone or together', () => {
    expect(codes(`${BASE}server: { trustedProxies: [loopback, 0.0.0.0/0] }\n`)).toEqual([
      'W_TRUSTED_PROXIES_ALL server.trustedProxies[1]',
    ]);
    expect(codes(`${BASE}server: { trustedProxies: ["::/0"] }\n`)).toEqual([
      'W_TRUSTED_PROXIES_ALL server.trustedProxies[0]',
    ]);
    const split = warnings(`${BASE}server:\n  trustedProxies: [0.0.0.0/1, 10.0.0.0/8, 128.0.0.0/1]\n`);
    expect(split.map((w) => [w.code, w.path, w.line, w.column])).toEqual([
      ['W_TRUSTED_PROXIES_ALL', 'server.trustedProxies', 6, 19],
    ]);
    expect(split[0].message).toMatch(/every IPv4 address/);
    expect(codes(`${BASE}server: { trustedProxies: ["::ffff:0.0.0.0/96"] }\n`)).toEqual([
      'W_TRUSTED_PROXIES_ALL server.trustedProxies[0]',
    ]);
    expect(codes(`${BASE}server: { trustedProxies: [loopback, uniquelocal, 0.0.0.0/1] }\n`)).toEqual([]);
  });

  it('warns when the CIDRs of a split address space are all trusted, and not when one is missing (property)', () => {
    // A random partition of the IPv4 space into CIDR blocks, by splitting blocks in two.
    const partition = fc.array(fc.nat(), { minLength: 1, maxLength: 12 }).map((choices) => {
      let blocks: [number, number][] = [[0, 0]];
      for (const c of choices) {
        const i = c % blocks.length;
        const [start, bits] = blocks[i];
        if (bits >= 32) continue;
        const half = 2 ** (31 - bits);
        blocks = [...blocks.slice(0, i), [start, bits + 1], [start + half, bits + 1], ...blocks.slice(i + 1)];
      }
      return blocks.map(
        ([start, bits]) => `${[24, 16, 8, 0].map((s) => Math.floor(start / 2 ** s) % 256).join('.')}/${bits}`,
      );
    });
    fc.assert(
      fc.property(partition, fc.nat(), (cidrs, drop) => {
        const list = (l: string[]) => `${BASE}server: { trustedProxies: [${l.join(', ')}] }\n`;
        expect(codes(list(cidrs)).filter((c) => c.startsWith('W_TRUSTED'))).toHaveLength(1);
        if (cidrs.length > 1) {
          const fewer = cidrs.filter((_, i) => i !== drop % cidrs.length);
          expect(codes(list(fewer))).toEqual([]);
        }
      }),
      { numRuns: 60 },
    );
  });

  it('warns about endpoint patterns that can never match, carry a query, or repeat another', () => {
    const w = warnings(`${BASE}  endpoints:
    - { pattern: "/system/airgap/%73eal", limit: 5, window: 60s }
    - { pattern: "/search?q=1", limit: 5, window: 60s, name: search }
    - { pattern: "/docs#intro", limit: 5, window: 60s }
    - { pattern: "/files\\\\x", limit: 5, window: 60s }
    - { pattern: "/api/./x", limit: 5, window: 60s }
    - { pattern: "/api/*", limit: 5, window: 60s, methods: [GET] }
    - { pattern: "/API/*/", limit: 9, window: 60s, methods: [GET, POST], name: api-b }
    - { pattern: "/api/*", limit: 9, window: 60s, methods: [DELETE], name: api-c }
exemptions:
  endpoints: ["GET /health", "GET /~me/%7Euser", "GET /health"]
`);
    expect(w.map((x) => [x.code, x.path, x.line])).toEqual([
      ['W_PATTERN_NEVER_MATCHES', 'rateLimiting.endpoints[0].pattern', 6],
      ['W_PATTERN_QUERY', 'rateLimiting.endpoints[1].pattern', 7],
      ['W_PATTERN_NEVER_MATCHES', 'rateLimiting.endpoints[2].pattern', 8],
      ['W_PATTERN_NEVER_MATCHES', 'rateLimiting.endpoints[3].pattern', 9],
      ['W_PATTERN_NEVER_MATCHES', 'rateLimiting.endpoints[4].pattern', 10],
      ['W_PATTERN_DUPLICATE', 'rateLimiting.endpoints[6].pattern', 12],
      ['W_PATTERN_NEVER_MATCHES', 'exemptions.endpoints[1]', 15],
      ['W_PATTERN_DUPLICATE', 'exemptions.endpoints[2]', 15],
    ]);
    const by = (path: string) => w.find((x) => x.path === path) as ConfigWarning;
    expect(by('rateLimiting.endpoints[0].pattern').message).toMatch(/"%73" .* "s"/);
    expect(by('rateLimiting.endpoints[0].pattern').suggestion).toMatch(/"\/system\/airgap\/seal"/);
    expect(by('rateLimiting.endpoints[1].pattern').suggestion).toMatch(/"\/search"/);
    expect(by('rateLimiting.endpoints[2].pattern').message).toMatch(/#/);
    expect(by('rateLimiting.endpoints[3].pattern').message).toMatch(/backslash/);
    expect(by('rateLimiting.endpoints[4].pattern').message).toMatch(/dot segment/);
    expect(by('rateLimiting.endpoints[6].pattern').message).toMatch(/rateLimiting\.endpoints\[5\]/);
    expect(by('exemptions.endpoints[1]').suggestion).toMatch(/"GET \/~me\/~user"/);
    expect(w.every((x) => x.column > 0 && x.suggestion.length > 0)).toBe(true);
  });

  it('warns about a ; in a pattern as the configured target.pathParameters reads request paths', () => {
    const rule = `${BASE}  endpoints:\n    - { pattern: "/a;v=1/b", limit: 5, window: 60s }\n`;
    const refused = warnings(rule);
    expect(refused.map((x) => x.code)).toEqual(['W_PATTERN_NEVER_MATCHES']);
    expect(refused[0].message).toMatch(/";" path parameter/);
    expect(warnings(`${rule}target: { pathParameters: strip }\n`).map((x) => x.code)).toEqual([
      'W_PATTERN_NEVER_MATCHES',
    ]);
    expect(warnings(`${rule}target: { pathParameters: keep }\n`)).toEqual([]);
  });

  it('has a stable code for each check', () => {
    expect(Object.values(WarningCode).sort()).toEqual([
      'W_ADMIN_PLAINTEXT_PUBLIC',
      'W_COST_PARALLEL',
      'W_DECISION_PLAINTEXT_PUBLIC',
      'W_ENVOY_PLAINTEXT_PUBLIC',
      'W_MAX_CONNECTIONS_FILE_LIMIT',
      'W_NO_UPSTREAM',
      'W_PATTERN_DUPLICATE',
      'W_PATTERN_NEVER_MATCHES',
      'W_PATTERN_QUERY',
      'W_QUOTA_SERIES_UNSERVED',
      'W_TRUSTED_PROXIES_ALL',
    ]);
  });

  it('keeps the positions of a loaded configuration for the gateway to log, and computes them for any other', () => {
    const r = loadConfigText(`${BASE}admin: { host: 0.0.0.0, token: admin-token-0123456789 }\n`, undefined);
    expect(r.ok).toBe(true);
    const config = r.config!;
    expect(configWarnings(config)).toEqual(r.warnings);
    const copy = { ...config };
    expect(configWarnings(copy)).toEqual([{ ...r.warnings[0], line: 0, column: 0 }]);
    expect(checkConfig(copy).map((f) => f.path)).toEqual([['admin', 'host']]);
  });

  it('has no warnings for a file with violations (they come first)', () => {
    const r = loadConfigText(`${BASE}admin: { host: 0.0.0.0, token: short }\n`, undefined);
    expect(r.ok).toBe(false);
    expect(r.warnings).toEqual([]);
  });
});

describe('sluice validate with warnings', () => {
  it('prints each warning with its code, position and suggestion, and exits 0', async () => {
    const file = join(tmp.dir, 'warn.yaml');
    const { writeFileSync } = await import('node:fs');
    // With an upstream: a file without one also gets W_NO_UPSTREAM (operator-views.e2e.test.ts).
    writeFileSync(
      file,
      `${BASE}admin:\n  host: 0.0.0.0\n  token: admin-token-0123456789\nupstream: { url: "http://127.0.0.1:1" }\n`,
    );
    const out: string[] = [];
    const err: string[] = [];
    const io = {
      out: (t: string) => out.push(t),
      err: (t: string) => err.push(t),
      onSignal: () => () => undefined,
    };
    expect(await main(['validate', file], io)).toBe(0);
    expect(err.join('')).toMatch(
      new RegExp(
        `^${file.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}:6:9 admin\\.host: warning W_ADMIN_PLAINTEXT_PUBLIC: .+; suggestion: .+\n$`,
      ),
    );
    expect(out.join('')).toBe(`${file}: valid (1 tier, 0 endpoint rules, 0 classes), 1 warning\n`);
  });
});

describe('logging warnings', () => {
  it('writes one warn line per warning with its code, position and suggestion', () => {
    const r = loadConfigText(`${BASE}admin: { host: 0.0.0.0, token: admin-token-0123456789 }\n`, 'w.yaml');
    const lines: string[] = [];
    const logger = createLogger('info', { write: (s: string) => void lines.push(s) });
    logConfigWarnings(logger, configWarnings(r.config!), 'w.yaml');
    expect(lines.map((l) => JSON.parse(l))).toEqual([
      expect.objectContaining({
        level: 40,
        code: 'W_ADMIN_PLAINTEXT_PUBLIC',
        file: 'w.yaml',
        path: 'admin.host',
        line: 5,
        column: 16,
        suggestion: expect.stringMatching(/127\.0\.0\.1/),
        msg: expect.stringMatching(/^configuration warning: the admin listener on 0\.0\.0\.0/),
      }),
    ]);
  });

  it('claims no line or column for a warning about a value the file did not set', () => {
    const r = loadConfigText(BASE, 'w.yaml');
    // A configuration completed in code, as sluice demo adds its admin listener: no position in any file.
    const config = {
      ...r.config!,
      admin: { host: '0.0.0.0', port: 0, token: 't'.repeat(20), tokenName: 'x' },
    };
    const lines: string[] = [];
    const logger = createLogger('info', { write: (s: string) => void lines.push(s) });
    logConfigWarnings(logger, configWarnings(config), undefined);
    const [line] = lines.map((l) => JSON.parse(l));
    expect(line).toMatchObject({ code: 'W_ADMIN_PLAINTEXT_PUBLIC', path: 'admin.host' });
    expect(line).not.toHaveProperty('line');
    expect(line).not.toHaveProperty('column');
  });
});
