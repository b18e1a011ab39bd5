import { join } from 'node:path';
import { credentials, type ServiceError, status } from '@grpc/grpc-js';
import fc from 'fast-check';
import { SharedStore } from 'sluice/shared';
import type { Agent } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfigText } from '../src/config/load-config.js';
import { rateLimitPackage } from '../src/envoy/grpc-server.js';
import { RateLimitService as Service } from '../src/envoy/rate-limit-service.js';
import {
  client,
  decisionEndpoint,
  send,
  startGateway,
  type TestGateway,
  tempDir,
  WALL_MS,
} from './support.js';

const YAML = `rateLimiting:
  defaultTier: free
  tiers:
    free:
      requestsPerMinute: 100000
  endpoints:
    - pattern: "/api/write/*"
      class: rl.write
ratelimit:
  rl.write:
    per_minute: 120
    burst: 5
headers:
  mode: draft-11
decision:
  port: 0
envoy:
  port: 0
  domains:
    - domain: edge
      descriptors:
        - key: remote_address
          rate_limit:
            requests_per_unit: 3
            unit: minute
        - key: generic_key
          value: slowpath
          rate_limit:
            requests_per_unit: 1
            unit: second
        - key: database
          value: users
          descriptors:
            - key: remote_address
              rate_limit:
                requests_per_unit: 2
                unit: hour
        - key: path
          value: "/admin*"
          rate_limit:
            name: admin
            requests_per_unit: 1
            unit: minute
        - key: path
          rate_limit:
            unlimited: true
        - key: tenant
          class: rl.write
        - key: trial
          shadow_mode: true
          rate_limit:
            requests_per_unit: 1
            unit: day
    - domain: mirror
      descriptors:
        - key: remote_address
          rate_limit:
            requests_per_unit: 1
            unit: minute
    - domain: paths
      descriptors:
        - key: path
          value: "/admin*"
          rate_limit:
            name: admin.paths
            requests_per_unit: 4
            unit: hour
        - key: ":path"
          value: "/admin*"
          rate_limit:
            name: admin.headers
            requests_per_unit: 4
            unit: hour
`;

interface Status {
  code: string;
  current_limit: { name: string; requests_per_unit: number; unit: string } | null;
  limit_remaining: number;
  duration_until_reset: { seconds: string; nanos: number } | null;
}
interface Answer {
  overall_code: string;
  statuses: Status[];
  response_headers_to_add: { key: string; value: string }[];
  raw_body: Buffer;
}
type Entry = { key: string; value: string };
type Descriptor = {
  entries: Entry[];
  hits_addend?: { value: number };
  limit?: { requests_per_unit: number; unit: string };
};

const d = (...pairs: [string, string][]): Descriptor => ({
  entries: pairs.map(([key, value]) => ({ key, value })),
});
const header = (a: Answer, name: string) =>
  a.response_headers_to_add.find((h) => h.key.toLowerCase() === name)?.value;

describe('Envoy rate limit service (gRPC ShouldRateLimit)', () => {
  const { dir, cleanup } = tempDir();
  let t: TestGateway;
  let rls: InstanceType<ReturnType<typeof rateLimitPackage>['RateLimitService']>;
  let agent: Agent;

  const ask = (domain: string, descriptors: Descriptor[], hits_addend?: number) =>
    new Promise<Answer>((resolve, reject) => {
      rls.ShouldRateLimit({ domain, descriptors, hits_addend }, (e: ServiceError | null, r: Answer) =>
        e ? reject(e) : resolve(r),
      );
    });
  const refused = (domain: string, descriptors: Descriptor[]) =>
    ask(domain, descriptors).then(
      () => undefined,
      (e: ServiceError) => e,
    );

  beforeAll(async () => {
    t = await startGateway(join(dir, 'rl.yaml'), { yaml: YAML });
    const { RateLimitService } = rateLimitPackage();
    rls = new RateLimitService(t.gateway.envoyAddress as string, credentials.createInsecure());
    agent = client();
  });
  afterAll(async () => {
    rls?.close();
    await agent?.close();
    await t?.gateway.close();
    cleanup();
  });

  it('answers OK with per-descriptor statuses, then OVER_LIMIT with headers and the problem body', async () => {
    const ip = d(['remote_address', '10.0.0.1']);
    const seen: [string, number, string][] = [];
    for (let i = 0; i < 3; i++) {
      const a = await ask('edge', [ip]);
      seen.push([
        a.overall_code,
        a.statuses[0].limit_remaining,
        a.statuses[0].duration_until_reset?.seconds ?? '',
      ]);
    }
    expect(seen).toEqual([
      ['OK', 2, '20'],
      ['OK', 1, '40'],
      ['OK', 0, '60'],
    ]);
    const a = await ask('edge', [ip]);
    expect(a.overall_code).toBe('OVER_LIMIT');
    expect(a.statuses).toEqual([
      {
        code: 'OVER_LIMIT',
        current_limit: { name: 'edge.remote_address', requests_per_unit: 3, unit: 'MINUTE' },
        limit_remaining: 0,
        duration_until_reset: { seconds: '60', nanos: 0 },
        quota: null,
      },
    ]);
    expect(header(a, 'ratelimit-policy')).toBe('"edge.remote_address";q=3;w=60');
    expect(header(a, 'ratelimit')).toBe('"edge.remote_address";r=0;t=60');
    expect(header(a, 'retry-after')).toBe('20');
    expect(header(a, 'content-type')).toBe('application/problem+json');
    expect(JSON.parse(a.raw_body.toString('utf8'))).toMatchObject({
      status: 429,
      code: 'rate_limited',
      limit: 3,
      retryAfter: 20,
      'violated-policies': ['edge.remote_address'],
    });
    // Another value of the same key has its own bucket; another domain its own configuration.
    expect((await ask('edge', [d(['remote_address', '10.0.0.2'])])).overall_code).toBe('OK');
    expect((await ask('mirror', [ip])).statuses[0].current_limit?.name).toBe('mirror.remote_address');
  });

  it.each(['path', ':path'])(
    'counts every spelling of one path against a %s descriptor: the canonical target, ASCII case folded',
    async (key) => {
      const spellings = ['/ADMIN/y', '/%61dmin/y', '//admin/y', '/./admin/y', '/x/../admin/y'];
      const codes: string[] = [];
      for (const round of [0, 1])
        for (const s of spellings) {
          const a = await ask('paths', [d([key, round === 0 ? s : `${s}?r=1`])]);
          codes.push(`${s} ${a.overall_code} ${a.statuses[0].current_limit?.name ?? '-'}`);
        }
      expect(codes.filter((c) => c.includes(' OK ')).length).toBe(4);
      expect(codes.every((c) => c.endsWith(key === 'path' ? 'admin.paths' : 'admin.headers'))).toBe(true);
      // A path the canonical form refuses (an encoded slash) is read as servers that decode it would: still /admin.
      expect((await ask('paths', [d([key, '/x/..%2Fadmin/y'])])).overall_code).toBe('OVER_LIMIT');
    },
  );

  it('takes hits_addend as the cost, per request and per descriptor (0 asks without spending)', async () => {
    const ip = d(['remote_address', '10.1.0.1']);
    expect((await ask('edge', [ip], 2)).statuses[0].limit_remaining).toBe(1);
    const peek = await ask('edge', [{ ...ip, hits_addend: { value: 0 } }]);
    expect(peek.statuses[0].limit_remaining).toBe(1);
    expect(peek.overall_code).toBe('OK');
    const over = await ask('edge', [ip], 2);
    expect(over.overall_code).toBe('OVER_LIMIT');
    expect(header(over, 'retry-after')).toBe('20');
    expect((await ask('edge', [{ ...ip, hits_addend: { value: 1 } }], 5)).statuses[0].limit_remaining).toBe(
      0,
    );
  });

  it('matches nested descriptors, exact values before prefixes before any value, in envoyproxy/ratelimit style', async () => {
    const nested = await ask('edge', [d(['database', 'users'], ['remote_address', '10.2.0.1'])]);
    expect(nested.statuses[0].current_limit).toEqual({
      name: 'edge.database_users.remote_address',
      requests_per_unit: 2,
      unit: 'HOUR',
    });
    expect(nested.statuses[0].duration_until_reset?.seconds).toBe('1800');
    const none = await ask('edge', [
      d(['database', 'users']),
      d(['database', 'orders'], ['remote_address', '1.1.1.1']),
    ]);
    expect(none.statuses.map((s) => s.current_limit)).toEqual([null, null]);
    const admin = await ask('edge', [d(['path', '/admin/users'])]);
    expect(admin.statuses[0].current_limit?.name).toBe('admin');
    expect((await ask('edge', [d(['path', '/admin/users'])])).overall_code).toBe('OVER_LIMIT');
    const open = await ask('edge', [d(['path', '/public'])]);
    expect(open.statuses[0]).toMatchObject({ code: 'OK', current_limit: null });
    expect(open.response_headers_to_add).toEqual([]);
    const unknown = await ask('nowhere', [d(['remote_address', '10.0.0.1'])]);
    expect(unknown.overall_code).toBe('OK');
  });

  it('decides all descriptors at once: an over-limit descriptor takes nothing from the others', async () => {
    const both = [d(['remote_address', '10.3.0.1']), d(['generic_key', 'slowpath'])];
    const first = await ask('edge', both);
    expect(first.statuses.map((s) => [s.code, s.limit_remaining])).toEqual([
      ['OK', 2],
      ['OK', 0],
    ]);
    const second = await ask('edge', both);
    expect(second.overall_code).toBe('OVER_LIMIT');
    expect(second.statuses.map((s) => [s.code, s.limit_remaining])).toEqual([
      ['OK', 2],
      ['OVER_LIMIT', 0],
    ]);
    t.clock.advance(1000);
    expect((await ask('edge', both)).overall_code).toBe('OK');
  });

  it('decides descriptors of different hits together: nothing is taken when one is over', async () => {
    t.clock.advance(60_000);
    const ip = { ...d(['remote_address', '10.6.0.1']), hits_addend: { value: 2 } };
    const slow = { ...d(['generic_key', 'slowpath']), hits_addend: { value: 1 } };
    const first = await ask('edge', [ip, slow]);
    expect(first.statuses.map((s) => [s.code, s.limit_remaining])).toEqual([
      ['OK', 1],
      ['OK', 0],
    ]);
    const second = await ask('edge', [
      { ...ip, hits_addend: { value: 1 } },
      { ...slow, hits_addend: { value: 3 } },
    ]);
    expect(second.overall_code).toBe('OVER_LIMIT');
    expect(second.statuses.map((s) => [s.code, s.limit_remaining])).toEqual([
      ['OK', 1],
      ['OVER_LIMIT', 0],
    ]);
    expect((await ask('edge', [{ ...ip, hits_addend: { value: 1 } }])).statuses[0].limit_remaining).toBe(0);
  });

  it('never denies for a shadow_mode descriptor but still reports its bucket', async () => {
    const trial = d(['trial', 'acme']);
    expect((await ask('edge', [trial])).statuses[0].limit_remaining).toBe(0);
    const again = await ask('edge', [trial]);
    expect(again.overall_code).toBe('OK');
    expect(again.statuses[0]).toMatchObject({ code: 'OK', limit_remaining: 0 });
    expect(header(again, 'retry-after')).toBeUndefined();
  });

  it('applies a limit override sent with the descriptor', async () => {
    const o: Descriptor = {
      ...d(['remote_address', '10.4.0.1']),
      limit: { requests_per_unit: 1, unit: 'SECOND' },
    };
    const a = await ask('edge', [o]);
    expect(a.statuses[0].current_limit).toEqual({
      name: 'edge.remote_address',
      requests_per_unit: 1,
      unit: 'SECOND',
    });
    expect((await ask('edge', [o])).overall_code).toBe('OVER_LIMIT');
  });

  it.each([
    ['SECOND', 'SECOND'],
    ['MINUTE', 'MINUTE'],
    ['HOUR', 'HOUR'],
    ['DAY', 'DAY'],
    ['WEEK', 'UNKNOWN'],
    ['MONTH', 'MONTH'],
    ['YEAR', 'YEAR'],
  ])(
    'applies the largest override per %s (4294967295) as a limit, never failing the call',
    async (unit, shown) => {
      const o: Descriptor = {
        ...d(['remote_address', `10.8.0.${shown.length}${unit.length}`]),
        limit: { requests_per_unit: 4_294_967_295, unit },
      };
      const a = await ask('edge', [o]);
      expect(a.overall_code).toBe('OK');
      expect(a.statuses[0].current_limit).toEqual({
        name: 'edge.remote_address',
        requests_per_unit: 4_294_967_295,
        unit: shown,
      });
      const left = a.statuses[0].limit_remaining;
      expect(left).toBeGreaterThan(200_000);
      expect((await ask('edge', [o])).statuses[0].limit_remaining).toBe(left - 1);
    },
  );

  it('keeps a shadow_mode descriptor from denying when Envoy overrides its limit', async () => {
    const o: Descriptor = {
      ...d(['trial', 'override-shadow']),
      limit: { requests_per_unit: 0, unit: 'HOUR' },
    };
    for (const left of [0, 0, 0]) {
      const a = await ask('edge', [o]);
      expect(a.overall_code).toBe('OK');
      expect(a.statuses[0]).toMatchObject({
        code: 'OK',
        limit_remaining: left,
        current_limit: { requests_per_unit: 1, unit: 'HOUR' },
      });
      expect(header(a, 'retry-after')).toBeUndefined();
      expect(a.raw_body.length).toBe(0);
    }
  });

  it('never drops an override: past 1,024 distinct ones the least recently used goes, buckets intact', async () => {
    const spent: Descriptor = {
      ...d(['remote_address', '10.6.0.1']),
      limit: { requests_per_unit: 1, unit: 'HOUR' },
    };
    const unconfigured: Descriptor = {
      ...d(['nolimit', 'before']),
      limit: { requests_per_unit: 2, unit: 'DAY' },
    };
    expect((await ask('edge', [spent])).overall_code).toBe('OK');
    expect((await ask('edge', [spent])).overall_code).toBe('OVER_LIMIT');
    expect((await ask('edge', [unconfigured])).statuses[0].limit_remaining).toBe(1);
    // The flood of the report: 1,100 distinct override counts, each one call.
    for (let batch = 0; batch < 11; batch++) {
      await Promise.all(
        Array.from({ length: 100 }, (_, i) =>
          ask('edge', [
            {
              ...d(['filler', `f${batch}`]),
              limit: { requests_per_unit: 1000 + batch * 100 + i, unit: 'HOUR' },
            },
          ]),
        ),
      );
    }
    // Overrides from before the flood were evicted from the table; their buckets are the same ones.
    expect((await ask('edge', [spent])).overall_code).toBe('OVER_LIMIT');
    const u = await ask('edge', [unconfigured]);
    expect(u.statuses[0]).toMatchObject({
      code: 'OK',
      limit_remaining: 0,
      current_limit: { name: 'edge.override', requests_per_unit: 2, unit: 'DAY' },
    });
    expect((await ask('edge', [unconfigured])).overall_code).toBe('OVER_LIMIT');
    // New overrides after the flood are limits: on a key without a limit, on a configured key, and zero.
    const fresh: [Descriptor, string][] = [
      [{ ...d(['nolimit', 'new']), limit: { requests_per_unit: 2, unit: 'DAY' } }, 'OK,OK,OVER_LIMIT'],
      [
        { ...d(['remote_address', '7.7.7.7']), limit: { requests_per_unit: 1, unit: 'DAY' } },
        'OK,OVER_LIMIT,OVER_LIMIT',
      ],
      [{ ...d(['unl', 'n']), limit: { requests_per_unit: 0, unit: 'MINUTE' } }, 'OK,OVER_LIMIT,OVER_LIMIT'],
    ];
    for (const [o, codes] of fresh) {
      const got: string[] = [];
      for (let i = 0; i < 3; i++) got.push((await ask('edge', [o])).overall_code);
      expect(got.join(','), JSON.stringify(o)).toBe(codes);
    }
    const full = t.logs.lines.filter(
      (l) => l.msg === 'envoy limit override table full: least recently used evicted',
    );
    expect(full.length).toBeGreaterThan(0);
    expect(full[0]).toMatchObject({ level: 40, evictions: 1, capacity: 1024 });
  });

  it('answers UNAVAILABLE, not OK, when the store can hold no more policies', async () => {
    const store = new SharedStore({ maxTrackedKeys: 1024, maxPolicies: 1, sweepIntervalMs: 0 });
    try {
      const g = t.gateway;
      const s = new Service(
        { runtime: g.runtime, metrics: g.metrics, logger: g.logger, store },
        () => WALL_MS,
      );
      const req = (n: number) => ({
        domain: 'edge',
        descriptors: [{ ...d(['nolimit', 'cap']), limit: { requests_per_unit: n, unit: 'HOUR' } }],
      });
      expect((await s.shouldRateLimit(req(1))).overall_code).toBe('OK');
      await expect(s.shouldRateLimit(req(2))).rejects.toMatchObject({
        kind: 'unavailable',
        message: expect.stringContaining('policies'),
      });
    } finally {
      store.close();
    }
  });

  it('reads a zero override as one request per unit: limited, not unlimited', async () => {
    const o: Descriptor = {
      ...d(['remote_address', '10.9.0.1']),
      limit: { requests_per_unit: 0, unit: 'HOUR' },
    };
    const a = await ask('edge', [o]);
    expect(a.statuses[0]).toMatchObject({
      code: 'OK',
      limit_remaining: 0,
      current_limit: { requests_per_unit: 1, unit: 'HOUR' },
    });
    expect((await ask('edge', [o])).overall_code).toBe('OVER_LIMIT');
  });

  it('refuses an override of an unknown unit with INVALID_ARGUMENT naming the field', async () => {
    for (const unit of ['UNKNOWN', 99] as unknown as string[]) {
      const e = await refused('edge', [
        d(['remote_address', '10.9.0.2']),
        { ...d(['remote_address', '10.9.0.3']), limit: { requests_per_unit: 5, unit } },
      ]);
      expect(e?.code, String(unit)).toBe(status.INVALID_ARGUMENT);
      expect(e?.details).toContain('descriptors[1].limit.unit');
    }
  });

  it('refuses malformed requests with INVALID_ARGUMENT', async () => {
    expect((await refused('', [d(['a', 'b'])]))?.code).toBe(status.INVALID_ARGUMENT);
    expect((await refused('edge', []))?.code).toBe(status.INVALID_ARGUMENT);
    expect((await refused('edge', [{ entries: [] }]))?.code).toBe(status.INVALID_ARGUMENT);
    expect((await refused('edge', [d(['', 'x'])]))?.code).toBe(status.INVALID_ARGUMENT);
    const many = Array.from({ length: 65 }, () => d(['remote_address', '1.2.3.4']));
    expect((await refused('edge', many))?.details).toContain('envoy.maxDescriptors');
  });

  it('decides exactly like the HTTP decision API for the same policy (property)', async () => {
    let run = 0;
    await fc.assert(
      fc.asyncProperty(
        fc.array(
          fc.record({ advanceMs: fc.integer({ min: 0, max: 3000 }), cost: fc.integer({ min: 1, max: 6 }) }),
          {
            minLength: 1,
            maxLength: 12,
          },
        ),
        async (steps) => {
          run++;
          const ip = `192.0.2.${run % 250}`;
          t.clock.advance(120_000);
          for (const s of steps) {
            t.clock.advance(s.advanceMs);
            const http = await send(agent, decisionEndpoint(t.gateway), {
              headers: {
                'x-original-uri': '/api/write/x',
                'x-real-ip': ip,
                'x-ratelimit-cost': String(s.cost),
              },
            });
            // The gRPC side decides the same sequence on a twin bucket of the same class: states must agree.
            const grpc = await ask('edge', [d(['tenant', `twin-${run}`])], s.cost);
            const httpState = /"rl\.write";r=(\d+);t=(\d+)/.exec(String(http.headers.ratelimit));
            const st = grpc.statuses[0];
            expect(grpc.overall_code === 'OK').toBe(http.status === 200);
            expect(st.limit_remaining).toBe(Number(httpState?.[1]));
            expect(Number(st.duration_until_reset?.seconds)).toBe(Number(httpState?.[2]));
            expect(header(grpc, 'retry-after')).toBe(http.headers['retry-after'] as string | undefined);
          }
        },
      ),
      { numRuns: 15 },
    );
  });

  it('keeps its buckets across a reload', async () => {
    const ip = d(['remote_address', '10.5.0.1']);
    await ask('edge', [ip]);
    const service = new Service(t.gateway, () => WALL_MS);
    const before = service.plan;
    expect((await t.gateway.reload()).ok).toBe(true);
    expect((await ask('edge', [ip])).statuses[0].limit_remaining).toBe(1);
    expect(service.plan).not.toBe(before);
  });
});

describe('Envoy service: global shadow mode', () => {
  const { dir, cleanup } = tempDir();
  afterAll(cleanup);

  it('answers OK while the bucket is empty, still reporting OVER_LIMIT per descriptor', async () => {
    const yaml = YAML.replace('envoy:\n  port: 0\n', 'envoy:\n  port: 0\n  shadowMode: true\n');
    const t = await startGateway(join(dir, 'rl.yaml'), { yaml });
    try {
      const s = new Service(t.gateway, () => WALL_MS);
      const req = { domain: 'mirror', descriptors: [d(['remote_address', '9.9.9.9'])] };
      await s?.shouldRateLimit(req);
      const a = await s?.shouldRateLimit(req);
      expect(a?.overall_code).toBe('OK');
      expect(a?.statuses[0].code).toBe('OVER_LIMIT');
      expect(a?.raw_body.length).toBe(0);
      expect(a?.response_headers_to_add.map((h) => h.key)).not.toContain('Retry-After');
    } finally {
      await t.gateway.close();
    }
  });
});

describe('envoy: configuration', () => {
  const load = (envoy: string) =>
    loadConfigText(`${YAML.slice(0, YAML.indexOf('decision:'))}${envoy}`, undefined, { env: {} });

  it('loads the shipped example file', async () => {
    const { loadConfigFile } = await import('../src/config/load-config.js');
    const r = loadConfigFile(new URL('../examples/decision-services.yaml', import.meta.url).pathname, {
      env: {},
    });
    expect(r.violations).toEqual([]);
    expect(r.config?.envoy?.domains[0].descriptors.map((n) => n.key)).toEqual([
      'remote_address',
      'generic_key',
      'tenant',
      'path',
    ]);
    expect(r.config?.decision?.port).toBe(8082);
  });

  it('resolves the defaults and the tree', () => {
    const r = load(
      'envoy:\n  domains:\n    - domain: a\n      descriptors:\n        - key: k\n          rate_limit: { requests_per_unit: 5, unit: second }\n',
    );
    expect(r.ok).toBe(true);
    expect(r.config?.envoy).toMatchObject({
      host: '127.0.0.1',
      port: 8081,
      shadowMode: false,
      maxDescriptors: 64,
    });
    expect(r.config?.envoy?.domains[0].descriptors[0].rateLimit).toEqual({
      name: 'a.k',
      unlimited: false,
      requestsPerUnit: 5,
      unit: 'second',
      burst: 5,
      className: undefined,
    });
  });

  it('reports every violation with its path', () => {
    const r = load(`envoy:
  domains:
    - domain: a
      descriptors:
        - key: k
          class: rl.nope
        - key: k
          class: rl.write
        - key: j
          value: "a*b"
          rate_limit: { unlimited: true, requests_per_unit: 1 }
        - key: m
          rate_limit: { requests_per_unit: 1 }
        - key: n
          class: rl.write
          rate_limit: { requests_per_unit: 1, unit: hour }
        - key: s
          class: rl.write
          shadow_mode: true
        - key: w
          rate_limit: { requests_per_unit: 1, unit: week }
    - domain: a
`);
    expect(r.ok).toBe(false);
    const byPath = Object.fromEntries(r.violations.map((v) => [v.path, v.message]));
    expect(byPath['envoy.domains[0].descriptors[0].class']).toContain('class "rl.nope" is not configured');
    expect(byPath['envoy.domains[0].descriptors[1].key']).toContain('appears twice');
    expect(byPath['envoy.domains[0].descriptors[2].value']).toContain('only allowed at the end');
    expect(byPath['envoy.domains[0].descriptors[2].rate_limit.unlimited']).toContain(
      'takes no requests_per_unit',
    );
    expect(byPath['envoy.domains[0].descriptors[3].rate_limit']).toContain(
      'needs requests_per_unit and unit',
    );
    expect(byPath['envoy.domains[0].descriptors[4].class']).toContain('cannot be combined');
    expect(byPath['envoy.domains[0].descriptors[5].shadow_mode']).toContain('cannot be a shadow');
    expect(byPath['envoy.domains[0].descriptors[6].rate_limit.unit']).toContain('must be one of');
    expect(byPath['envoy.domains[1].domain']).toContain('configured twice');
  });
});
