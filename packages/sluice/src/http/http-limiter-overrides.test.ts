import { describe, expect, it } from 'vitest';
import { Limiter, ManualClock, type OverrideInput, parseOverride } from '../core/index.js';
import { MemoryOverrides, MemoryStore } from '../memory/index.js';
import { createHttpLimiter } from './http-limiter.js';
import type { HttpRequestInfo, Verdict } from './types.js';

const T0 = Date.UTC(2026, 0, 1);

function setup(exempt?: { tiers?: string[]; endpoints?: string[] }) {
  const clock = new ManualClock(0);
  let wall = T0;
  const overrides = new MemoryOverrides(() => wall);
  const limiter = new Limiter({
    policies: [
      { name: 'rl.read', quota: 60, window: 60, burst: 2 },
      { name: 'rl.write', quota: 10, window: 60, burst: 1 },
    ],
    store: new MemoryStore({ clock, sweepIntervalMs: 0 }),
  });
  const http = createHttpLimiter({
    limiter,
    rules: [
      { name: 'all', policies: ['rl.read'], key: 'caller' },
      { name: 'writes', methods: ['POST'], policies: ['rl.write'], key: 'caller' },
    ],
    headers: 'both',
    wallClock: () => wall,
    overrides,
    ...(exempt === undefined ? {} : { exempt }),
  });
  const set = (input: OverrideInput) =>
    overrides.set(parseOverride(input, wall, 'ops'), {
      action: 'set',
      id: 'x',
      who: 'ops',
      at: wall,
      reason: 'r',
    });
  const advance = (ms: number) => {
    clock.advance(ms);
    wall += ms;
  };
  return { http, set, advance, overrides };
}

const req = (r: Partial<HttpRequestInfo> = {}): HttpRequestInfo => ({
  method: 'GET',
  path: '/items',
  headers: {},
  remoteAddress: '203.0.113.7',
  identity: { tenant: 'acme', client: 'web', tier: 'gold' },
  ...r,
});

const sync = (v: unknown): Verdict => {
  if (v instanceof Promise) throw new Error('expected a verdict in the same tick');
  return v as Verdict;
};
const header = (v: Verdict, name: string) => v.headers.find(([n]) => n === name)?.[1];
const statuses = (http: ReturnType<typeof setup>['http'], n: number, r = req()) =>
  Array.from({ length: n }, () => sync(http.evaluate(r)).status);

describe('run-time overrides in the HTTP limiter', () => {
  it('applies an exact-key limit with its own numbers in the headers and the 429 body', async () => {
    const { http, set } = setup();
    expect(statuses(http, 3)).toEqual([200, 200, 429]);
    await set({
      pattern: 'tenant:acme:client:web',
      policy: 'rl.read',
      quota: 600,
      window: 60,
      burst: 4,
      reason: 'x',
    });
    const first = sync(http.evaluate(req()));
    expect(header(first, 'RateLimit-Policy')).toBe('"rl.read";q=600;w=60');
    expect(header(first, 'X-RateLimit-Limit')).toBe('600');
    expect(header(first, 'RateLimit')).toBe('"rl.read";r=3;t=1');
    expect(statuses(http, 4)).toEqual([200, 200, 200, 429]);
    const denied = sync(http.evaluate(req()));
    expect(JSON.parse(denied.body as string)).toMatchObject({ 'violated-policies': ['rl.read'] });
    expect(denied.body).toContain('bursts of up to 4');
    // Another client of the tenant keeps the configured policy.
    expect(
      header(sync(http.evaluate(req({ identity: { tenant: 'acme', client: 'cli' } }))), 'RateLimit-Policy'),
    ).toBe('"rl.read";q=60;w=60');
  });

  it('matches a tenant, a prefix and a tier scope; the narrowest rule wins', async () => {
    const { http, set } = setup();
    await set({ pattern: 'tenant:acme', quota: 100, window: 60, reason: 'tenant' });
    await set({ pattern: 'tenant:acme:client:w*', quota: 200, window: 60, reason: 'prefix' });
    await set({ pattern: 'tenant:other', tier: 'silver', quota: 300, window: 60, reason: 'tier' });
    const policyOf = (identity: HttpRequestInfo['identity']) =>
      header(sync(http.evaluate(req({ identity }))), 'RateLimit-Policy');
    expect(policyOf({ tenant: 'acme', client: 'web' })).toBe('"rl.read";q=200;w=60');
    expect(policyOf({ tenant: 'acme', client: 'cli' })).toBe('"rl.read";q=100;w=60');
    expect(policyOf({ tenant: 'other', client: 'a', tier: 'gold' })).toBe('"rl.read";q=60;w=60');
    expect(policyOf({ tenant: 'other', client: 'a', tier: 'silver' })).toBe('"rl.read";q=300;w=60');
  });

  it('applies a rule on a tenant to every request of that tenant, whatever its bucket key', async () => {
    const { http, set, overrides } = setup();
    // A tenant alone (no client nor user) keys by address; an API key by its hash: the tenant still decides.
    const onlyTenant = req({ identity: { tenant: 'acme' } });
    const withApiKey = req({ identity: { tenant: 'acme', apiKey: 'k-1' } });
    expect(sync(http.evaluate(onlyTenant)).key).toBe('ip:203.0.113.7');
    expect(sync(http.evaluate(withApiKey)).key).toMatch(/^apikey:/);
    await set({ pattern: 'tenant:acme', policy: 'rl.read', quota: 100, window: 60, reason: 'limit' });
    expect(header(sync(http.evaluate(onlyTenant)), 'RateLimit-Policy')).toBe('"rl.read";q=100;w=60');
    const id = 'tenant:acme policy=rl.read';
    await overrides.remove(id, { action: 'remove', id, who: 'ops', at: T0, reason: 'done' });
    await set({ pattern: 'tenant:acme:*', block: 403, reason: 'abuse' });
    for (const r of [onlyTenant, withApiKey, req()]) {
      const v = sync(http.evaluate(r));
      expect(v.status).toBe(403);
      expect(v.outcome).toBe('blocked');
    }
    // Another tenant, and a caller with no tenant, are not blocked (at another address: this one's bucket is spent).
    const elsewhere = { remoteAddress: '198.51.100.1' };
    expect(sync(http.evaluate(req({ ...elsewhere, identity: { tenant: 'beta' } }))).status).toBe(200);
    expect(sync(http.evaluate(req({ ...elsewhere, identity: undefined }))).status).toBe(200);
    // An exact rule on the key still outranks the tenant, as it does for the tenant's own keys.
    await set({ pattern: 'ip:203.0.113.7', unlimited: true, reason: 'office' });
    expect(sync(http.evaluate(onlyTenant)).outcome).toBe('exempt_override');
  });

  it('leaves an unlimited policy out and exempts a request with nothing left', async () => {
    const { http, set } = setup();
    await set({ pattern: 'tenant:acme:client:web', policy: 'rl.write', unlimited: true, reason: 'x' });
    const post = sync(http.evaluate(req({ method: 'POST' })));
    expect(header(post, 'RateLimit-Policy')).toBe('"rl.read";q=60;w=60');
    await set({ pattern: 'tenant:acme:client:web', unlimited: true, reason: 'x' });
    expect(statuses(http, 5)).toEqual([200, 200, 200, 200, 200]);
    expect(sync(http.evaluate(req())).outcome).toBe('exempt_override');
  });

  it('matches a key over the length limit as built, not its hash: a long client id does not escape a block', async () => {
    const { http, set } = setup();
    const long = req({ identity: { tenant: 'acme', client: 'c'.repeat(300), tier: 'gold' } });
    // The bucket key is hashed (tenant:#...), so a pattern could only match the key as it was built.
    expect(sync(http.evaluate(long)).key).toMatch(/^tenant:#/);
    await set({ pattern: 'tenant:acme', block: 403, reason: 'x' });
    expect(sync(http.evaluate(long)).status).toBe(403);
    expect(sync(http.evaluate(req({ identity: { tenant: 'other', client: 'c'.repeat(300) } }))).status).toBe(
      200,
    );
    // A block of the hashed key itself (what a penalty block sets) applies too.
    const other = req({ identity: { tenant: 'other', client: 'c'.repeat(300) } });
    await set({ pattern: sync(http.evaluate(other)).key as string, block: 403, reason: 'penalty' });
    expect(sync(http.evaluate(other)).status).toBe(403);
  });

  it('blocks a caller of an unlimited tier, by its key, its tenant or its address; limits leave it exempt', async () => {
    const { http, set } = setup({ tiers: ['gold'] });
    expect(sync(http.evaluate(req())).action).toBe('exempt');
    const other = req({
      identity: { tenant: 'zeta', client: 'web', tier: 'gold' },
      remoteAddress: '192.0.2.9',
    });
    for (const pattern of ['tenant:acme:client:web', 'tenant:acme', 'ip:203.0.113.7', 'ip:203.0.113.0/24']) {
      const { http, set } = setup({ tiers: ['gold'] });
      await set({ pattern, block: 403, reason: 'leaked key' });
      const v = sync(http.evaluate(req()));
      expect([pattern, v.status, v.outcome]).toEqual([pattern, 403, 'blocked']);
      expect(sync(http.evaluate(other)).action).toBe('exempt');
    }
    // A limit has no bucket of an unlimited tier to replace: the caller stays exempt.
    await set({ pattern: 'tenant:acme', quota: 1, window: 3600, reason: 'slow down' });
    expect(statuses(http, 3)).toEqual([200, 200, 200]);
  });

  it('blocks an address on an exempt endpoint too, which stays exempt for everyone else', async () => {
    const { http, set } = setup({ endpoints: ['/public/*'] });
    const pub = req({ path: '/public/doc', identity: undefined });
    expect(sync(http.evaluate(pub)).action).toBe('exempt');
    await set({ pattern: 'ip:203.0.113.7', block: 403, reason: 'abuse' });
    const v = sync(http.evaluate(pub));
    expect([v.status, v.outcome]).toEqual([403, 'blocked']);
    expect(sync(http.evaluate({ ...pub, remoteAddress: '192.0.2.9' })).action).toBe('exempt');
  });

  it('blocks with 429 and a Retry-After counting down to the end, then lets the key through', async () => {
    const { http, set, advance } = setup();
    await set({ pattern: 'tenant:acme', block: 429, ttlSeconds: 90, reason: 'abuse' });
    const v = sync(http.evaluate(req()));
    expect(v.status).toBe(429);
    expect(v.outcome).toBe('blocked');
    expect(header(v, 'Retry-After')).toBe('90');
    expect(JSON.parse(v.body as string)).toMatchObject({ code: 'blocked', status: 429 });
    expect(v.body).not.toContain('abuse');
    advance(60_500);
    expect(header(sync(http.evaluate(req())), 'Retry-After')).toBe('30');
    advance(29_500);
    expect(sync(http.evaluate(req())).status).toBe(200);
  });

  it('blocks an address range with 403, whatever the key', async () => {
    const { http, set } = setup();
    await set({ pattern: 'ip:203.0.113.0/24', block: 403, reason: 'scanner' });
    const v = sync(http.evaluate(req({ identity: undefined })));
    expect(v.status).toBe(403);
    expect(header(v, 'Retry-After')).toBeUndefined();
    expect(sync(http.evaluate(req())).status).toBe(403);
    expect(sync(http.evaluate(req({ remoteAddress: '198.51.100.1' }))).status).toBe(200);
  });

  it('blocks a single IPv6 client by its address, not the rest of its /64, whatever the key', async () => {
    const { http, set } = setup();
    // The client's bucket key is ip:2001:db8::/64: an exact-key rule on the address could never match.
    await set({ pattern: 'ip:2001:db8::1', block: 403, reason: 'scanner' });
    expect(sync(http.evaluate(req({ remoteAddress: '2001:db8::1', identity: undefined }))).status).toBe(403);
    expect(sync(http.evaluate(req({ remoteAddress: '2001:db8::1' }))).status).toBe(403);
    expect(sync(http.evaluate(req({ remoteAddress: '2001:db8::2', identity: undefined }))).status).toBe(200);
  });

  it('blocks and limits a single IPv4 client by its address, whatever its key', async () => {
    const { http, set } = setup();
    await set({ pattern: 'ip:203.0.113.7', block: 403, reason: 'scanner' });
    expect(sync(http.evaluate(req({ identity: undefined }))).status).toBe(403);
    expect(sync(http.evaluate(req())).status).toBe(403);
    expect(sync(http.evaluate(req({ identity: { tenant: 'acme' } }))).status).toBe(403);
    expect(sync(http.evaluate(req({ remoteAddress: '203.0.113.8' }))).status).toBe(200);
    const limited = setup();
    await limited.set({ pattern: 'ip:203.0.113.7', quota: 1, window: 3600, reason: 'slow down' });
    expect(statuses(limited.http, 3)).toEqual([200, 429, 429]);
  });

  it('applies a rule on an IPv4-mapped or zero-padded address to the IPv4 client it names', async () => {
    const { http, set } = setup();
    await set({ pattern: 'ip:::ffff:203.0.113.7', block: 403, reason: 'mapped' });
    await set({ pattern: 'ip:198.51.100.001', block: 403, reason: 'padded' });
    expect(sync(http.evaluate(req({ identity: undefined }))).status).toBe(403);
    expect(sync(http.evaluate(req({ remoteAddress: '198.51.100.1', identity: undefined }))).status).toBe(403);
  });

  it('leaves a concurrency policy as configured under a limit, and lifts it only with unlimited', async () => {
    const overrides = new MemoryOverrides(() => T0);
    const limiter = new Limiter({
      policies: [
        { name: 'rl.read', quota: 60, window: 60, burst: 2 },
        { name: 'slots', concurrent: 1 },
      ],
      store: new MemoryStore({ clock: new ManualClock(0), sweepIntervalMs: 0 }),
    });
    const http = createHttpLimiter({
      limiter,
      rules: [{ name: 'all', policies: ['rl.read', 'slots'], key: 'caller' }],
      headers: 'both',
      wallClock: () => T0,
      overrides,
    });
    const set = (input: OverrideInput) =>
      overrides.set(parseOverride(input, T0, 'ops'), {
        action: 'set',
        id: 'x',
        who: 'ops',
        at: T0,
        reason: 'r',
      });
    await set({ pattern: 'ip:203.0.113.7', quota: 6000, window: 60, reason: 'more for a week' });
    // The request in flight holds the one slot (never released here): the next one is refused by it.
    const first = sync(http.evaluate(req()));
    expect(first.status).toBe(200);
    expect(header(first, 'RateLimit-Policy')).toContain('"rl.read";q=6000;w=60');
    const second = sync(http.evaluate(req()));
    expect(second.status).toBe(429);
    expect(header(second, 'RateLimit-Policy')).not.toContain('"slots";q=6000');
    // A limit scoped to the concurrency policy by name changes nothing either; a broader unlimited rule applies.
    await set({ pattern: 'ip:203.0.113.8', quota: 6000, window: 60, policy: 'slots', reason: 'x' });
    await set({ pattern: 'ip:203.0.113.0/24', unlimited: true, policy: 'slots', reason: 'load test' });
    const other = req({ remoteAddress: '203.0.113.8' });
    expect([sync(http.evaluate(other)).status, sync(http.evaluate(other)).status]).toEqual([200, 200]);
    await set({ pattern: 'ip:203.0.113.9', quota: 6000, window: 60, policy: 'slots', reason: 'x' });
    await set({ pattern: 'ip:203.0.113.0/24', block: 403, policy: 'slots', reason: 'x' });
    expect(sync(http.evaluate(req({ remoteAddress: '203.0.113.9' }))).status).toBe(403);
  });

  it('goes back to the configured policy and its own bucket when a limit ends', async () => {
    const { http, set, advance } = setup();
    await set({ pattern: 'tenant:acme:client:web', quota: 6000, window: 60, ttlSeconds: 10, reason: 'x' });
    expect(statuses(http, 5)).toEqual([200, 200, 200, 200, 200]);
    advance(10_000);
    expect(header(sync(http.evaluate(req())), 'RateLimit-Policy')).toBe('"rl.read";q=60;w=60');
  });

  it('sees a removal at the next decision', async () => {
    const { http, set, overrides } = setup();
    await set({ pattern: 'tenant:acme', block: 403, reason: 'x' });
    expect(sync(http.evaluate(req())).status).toBe(403);
    await overrides.remove('tenant:acme', {
      action: 'remove',
      id: 'tenant:acme',
      who: 'ops',
      at: T0,
      reason: 'ok',
    });
    expect(sync(http.evaluate(req())).status).toBe(200);
    expect((await overrides.history()).map((c) => c.action)).toEqual(['set', 'remove']);
  });
});
