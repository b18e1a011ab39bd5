import { describe, expect, it } from 'vitest';
import {
  type Check,
  type Decision,
  Limiter,
  ManualClock,
  type PolicyOptions,
  type RateLimitStore,
} from '../core/index.js';
import { MemoryStore } from '../memory/index.js';
import { createHttpLimiter } from './http-limiter.js';
import type { HttpLimiterOptions, IdentifyResult } from './http-limiter-options.js';
import type { HttpRequestInfo, Verdict } from './types.js';

const POLICIES: PolicyOptions[] = [
  { name: 'free', quota: 60, window: 60, burst: 2 },
  { name: 'standard', quota: 300, window: 60, burst: 5 },
  { name: '/system/airgap/seal', quota: 5, window: 3600, burst: 5 },
  { name: 'rl.public_auth', quota: 10, window: 60, burst: 2 },
];

function setup(options: Partial<HttpLimiterOptions> = {}, store?: RateLimitStore) {
  const clock = new ManualClock(0);
  const limiter = new Limiter({
    policies: POLICIES,
    store: store ?? new MemoryStore({ clock, sweepIntervalMs: 0 }),
  });
  const http = createHttpLimiter({
    limiter,
    rules: [
      { name: 'tier free', tier: 'free', policies: ['free'], key: 'caller' },
      { name: 'tier standard', tier: 'standard', policies: ['standard'], key: 'caller' },
      {
        name: '/system/airgap/seal',
        path: '/system/airgap/seal',
        tier: ['free', 'standard'],
        policies: ['/system/airgap/seal'],
        key: 'caller',
      },
    ],
    exempt: { tiers: ['internal'] },
    publicAuth: { policy: 'rl.public_auth' },
    wallClock: () => 1_700_000_000_000,
    ...options,
  });
  return { clock, limiter, http };
}

const req = (r: Partial<HttpRequestInfo> = {}): HttpRequestInfo => ({
  method: 'POST',
  path: '/system/airgap/seal',
  headers: {},
  remoteAddress: '203.0.113.7',
  identity: { tier: 'standard' },
  ...r,
});

const sync = (v: unknown): Verdict => {
  if (v instanceof Promise) throw new Error('expected a verdict in the same tick');
  return v as Verdict;
};

describe('request targets', () => {
  it('match rules on the canonical path, so encodings and dot segments cannot skip a rule', () => {
    const { http } = setup();
    for (const path of [
      '/system/airgap/seal',
      '/system/./airgap/%73eal',
      '/system//airgap/seal/',
      '/x/../system/airgap/seal',
    ]) {
      const v = sync(http.evaluate(req({ path })));
      expect(v.rules).toContain('/system/airgap/seal');
    }
    // Four spellings and one more of the burst of five: the sixth request is refused, whatever its spelling.
    expect(sync(http.evaluate(req({ path: '/SYSTEM/airgap/seal' }))).action).toBe('allow');
    expect(sync(http.evaluate(req({ path: '/system/airgap/./seal' }))).action).toBe('deny');
  });

  it('refuse fragments, encoded slashes and backslashes with a 400 problem before anything is counted', () => {
    const { http } = setup();
    for (const [path, code] of [
      ['/system/airgap/seal#1', 'fragment'],
      ['/system/airgap%2Fseal', 'encoded_separator'],
      ['/.well-known/..%2Fsystem%2Fairgap%2Fseal', 'encoded_separator'],
      ['/system\\airgap\\seal', 'backslash'],
    ] as const) {
      const v = sync(http.evaluate(req({ path, headers: { 'x-request-id': 'rid-1' } })));
      expect(v).toMatchObject({ action: 'deny', status: 400, outcome: `bad_target_${code}` });
      const body = JSON.parse(v.body as string);
      expect(body).toMatchObject({ status: 400, code: 'bad_request_target', correlation_id: 'rid-1' });
      expect(v.headers).toContainEqual(['Content-Type', 'application/problem+json']);
    }
    // Nothing was charged: the whole burst is still there.
    expect(sync(http.evaluate(req())).headers).toContainEqual(['X-RateLimit-Remaining', '4']);
  });

  it('decode encoded slashes instead when asked', () => {
    const { http } = setup({ target: { encodedSlashes: 'decode' } });
    expect(sync(http.evaluate(req({ path: '/system/airgap%2Fseal' }))).rules).toContain(
      '/system/airgap/seal',
    );
  });
});

describe('tiers', () => {
  it('decide a caller against the rules of its tier only, and exempt listed tiers with the identity', () => {
    const { http } = setup();
    const free = sync(
      http.evaluate(req({ path: '/api/x', identity: { tier: 'free', tenant: 't', client: 'c' } })),
    );
    expect(free).toMatchObject({ action: 'allow', rules: ['tier free'], key: 'tenant:t:client:c' });
    const internal = sync(http.evaluate(req({ identity: { tier: 'internal', tenant: 't' } })));
    expect(internal).toMatchObject({ action: 'exempt', exemptReason: 'tier', outcome: 'exempt_tier' });
    expect(internal.identity).toEqual({ tier: 'internal', tenant: 't' });
    expect(sync(http.evaluate(req({ identity: { tier: 'gold' } })))).toMatchObject({
      exemptReason: 'no_rule',
    });
  });
});

describe('identify', () => {
  it('verifies after the gate, decides with the identity, and stays in the same tick when it answers at once', () => {
    const seen: string[] = [];
    const { http } = setup({
      identify: (r) => {
        seen.push(r.path);
        return { tier: 'free', tenant: 'acme', client: 'ci' };
      },
    });
    const v = sync(http.evaluate(req({ path: '/api/items', identity: undefined })));
    expect(v).toMatchObject({ action: 'allow', key: 'tenant:acme:client:ci', rules: ['tier free'] });
    expect(seen).toEqual(['/api/items']);
  });

  it('answers refused credentials with 401, counts them against the client IP, then refuses unverified', async () => {
    let verified = 0;
    const { http } = setup({
      identify: async (r): Promise<IdentifyResult> => {
        verified++;
        return (r.headers as Record<string, string>).authorization === 'Bearer good'
          ? { tier: 'standard', tenant: 'acme', user: 'u' }
          : {
              failed: true,
              reason: 'invalid_token',
              headers: [['WWW-Authenticate', 'Bearer error="invalid_token"']],
            };
      },
    });
    const bad = { headers: { authorization: 'Bearer bad' }, identity: undefined };
    for (let i = 0; i < 2; i++) {
      const v = await http.evaluate(req(bad));
      expect(v).toMatchObject({ status: 401, outcome: 'invalid_credentials_invalid_token' });
      expect(v.decision?.allowed).toBe(true);
      expect(v.headers).toContainEqual(['WWW-Authenticate', 'Bearer error="invalid_token"']);
      expect(JSON.parse(v.body as string)).toMatchObject({ code: 'invalid_credentials', status: 401 });
    }
    const refused = await http.evaluate(
      req({ headers: { authorization: 'Bearer good' }, identity: undefined }),
    );
    expect(refused).toMatchObject({ status: 429, outcome: 'public_auth_limited' });
    expect(verified).toBe(2);
  });

  it('answers a failure with a refusal as its 400 and code, counting nothing', async () => {
    const { http } = setup({
      identify: () => ({
        failed: true,
        reason: 'invalid_identity_claim',
        counts: false,
        detail: 'The identity claim tenant_id of the bearer token holds a control character.',
        refusal: { status: 400, code: 'invalid_identity_header' },
      }),
    });
    const v = sync(http.evaluate(req({ headers: { authorization: 'Bearer odd' }, identity: undefined })));
    expect(v).toMatchObject({ status: 400, outcome: 'invalid_identity_header', decision: undefined });
    expect(JSON.parse(v.body as string)).toMatchObject({
      type: 'about:blank',
      title: 'Bad Request',
      status: 400,
      code: 'invalid_identity_header',
      detail: 'The identity claim tenant_id of the bearer token holds a control character.',
    });
  });

  it('does not count failures the rule excludes (an expired token)', async () => {
    const { http } = setup({ identify: () => ({ failed: true, reason: 'token_expired' }) });
    for (let i = 0; i < 5; i++) {
      const v = await http.evaluate(req({ headers: { authorization: 'Bearer old' }, identity: undefined }));
      expect(v).toMatchObject({
        status: 401,
        outcome: 'invalid_credentials_token_expired',
        decision: undefined,
      });
    }
  });
});

describe('a store that throws', () => {
  it('answers 503 with Retry-After and reports the error, never a 500', async () => {
    const errors: unknown[] = [];
    const broken = new MemoryStore();
    const failing: RateLimitStore = Object.assign(Object.create(broken), {
      decide: (_checks: readonly Check[]): Promise<Decision> => Promise.reject(new Error('connection reset')),
    });
    const { http } = setup({ onStoreError: (e) => errors.push(e) }, failing);
    const v = await http.evaluate(req({ headers: { 'x-request-id': 'r-9' } }));
    expect(v).toMatchObject({
      action: 'deny',
      status: 503,
      outcome: 'store_unavailable',
      key: 'ip:203.0.113.7',
    });
    expect(v.headers).toContainEqual(['Retry-After', '1']);
    expect(JSON.parse(v.body as string)).toMatchObject({
      status: 503,
      code: 'rate_limiter_unavailable',
      correlation_id: 'r-9',
    });
    expect(errors).toHaveLength(1);
  });
});
