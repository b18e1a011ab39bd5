import { describe, expect, it } from 'vitest';
import { loadConfigText } from '../config/load-config.js';
import { EnvoyPlan } from './envoy-plan.js';

const config = (descriptors: string, prefix = '', envoy = '') => {
  const r = loadConfigText(
    `rateLimiting:\n  defaultTier: t\n  tiers:\n    t:\n      requestsPerMinute: 1\n${prefix === '' ? '' : `keys:\n  prefix: "${prefix}"\n`}envoy:\n${envoy === '' ? '' : `  ${envoy}\n`}  domains:\n    - domain: d\n      descriptors:\n${descriptors}`,
    undefined,
    { env: {} },
  );
  if (!r.ok) throw new Error(JSON.stringify(r.violations));
  return r.config;
};

describe('EnvoyPlan', () => {
  const tree = `        - key: path
          value: "/a*"
          rate_limit: { requests_per_unit: 1, unit: second, name: short }
        - key: path
          value: "/a/b*"
          rate_limit: { requests_per_unit: 2, unit: second, name: long }
        - key: path
          value: "/a/b/c"
          rate_limit: { requests_per_unit: 3, unit: second, name: exact }
        - key: path
          rate_limit: { requests_per_unit: 4, unit: second, name: any }
`;

  it('prefers an exact value, then the longest prefix, then any value', () => {
    const plan = new EnvoyPlan(config(tree));
    const name = (v: string) => plan.match('d', [{ key: 'path', value: v }])?.policy?.name;
    expect(name('/a/b/c')).toBe('exact');
    expect(name('/a/b/x')).toBe('long');
    expect(name('/a/x')).toBe('short');
    expect(name('/z')).toBe('any');
    expect(plan.match('other', [{ key: 'path', value: '/a' }])).toBeUndefined();
    expect(plan.match('d', [{ key: 'nope', value: '/a' }])).toBeUndefined();
  });

  it('reads path descriptor values in canonical form, case folded, unless envoy.canonicalPathKeys is empty', () => {
    const admin = `        - key: path
          value: "/Admin*"
          rate_limit: { requests_per_unit: 1, unit: second, name: admin }
        - key: other
          value: "/admin*"
          rate_limit: { requests_per_unit: 1, unit: second, name: other }
`;
    const on = new EnvoyPlan(config(admin));
    const value = (plan: EnvoyPlan, key: string, v: string) => plan.entryValue(key, v);
    expect(value(on, 'path', '/x/../ADMIN/%79?Q=A')).toBe('/admin/y');
    expect(value(on, 'path', '/a%2Fb')).toBe('/a/b');
    expect(value(on, 'path', '/a;x=1/b')).toBe('/a/b');
    expect(value(on, 'path', 'not a path')).toBe('not a path');
    expect(value(on, 'other', '/X/../a')).toBe('/X/../a');
    const name = (plan: EnvoyPlan, key: string, v: string) =>
      plan.match('d', [{ key, value: plan.entryValue(key, v) }])?.policy?.name;
    expect(name(on, 'path', '/ADMIN/y')).toBe('admin');
    expect(name(on, 'other', '/ADMIN/y')).toBeUndefined();
    const off = new EnvoyPlan(
      config(admin.replace('        - key: path', '        - key: path'), '', 'canonicalPathKeys: []'),
    );
    expect(value(off, 'path', '/x/../ADMIN/y')).toBe('/x/../ADMIN/y');
    expect(name(off, 'path', '/Admin/y')).toBe('admin');
    expect(name(off, 'path', '/admin/y')).toBeUndefined();
  });

  it('applies a limit only when the walk reaches the last entry', () => {
    const plan = new EnvoyPlan(
      config(`        - key: a
          rate_limit: { requests_per_unit: 1, unit: minute }
          descriptors:
            - key: b
              value: x
`),
    );
    expect(plan.match('d', [{ key: 'a', value: '1' }])?.policy?.name).toBe('d.a');
    expect(
      plan.match('d', [
        { key: 'a', value: '1' },
        { key: 'b', value: 'x' },
      ])?.policy,
    ).toBeUndefined();
    expect(
      plan.match('d', [
        { key: 'a', value: '1' },
        { key: 'b', value: 'y' },
      ]),
    ).toBeUndefined();
  });

  it('builds bucket keys that no choice of keys and values can make collide, with the key prefix', () => {
    const plan = new EnvoyPlan(config(tree, 'app:'));
    const k1 = plan.bucketKey('d', [{ key: 'a=b', value: 'c' }]);
    const k2 = plan.bucketKey('d', [{ key: 'a', value: 'b=c' }]);
    const k3 = plan.bucketKey('d', [
      { key: 'a', value: 'b' },
      { key: 'c', value: 'd' },
    ]);
    const k4 = plan.bucketKey('d', [{ key: 'a', value: 'b:c=d' }]);
    expect(new Set([k1, k2, k3, k4]).size).toBe(4);
    expect(k3).toBe('app:envoy:d:a=b:c=d');
    const long = plan.bucketKey('d', [{ key: 'k', value: 'v'.repeat(500) }]);
    expect(long.length).toBeLessThan(40);
    expect(long.startsWith('app:')).toBe(true);
  });

  it('reuses unchanged policies on reload so buckets survive, and replaces changed ones', () => {
    const a = new EnvoyPlan(config(tree));
    const b = new EnvoyPlan(config(tree), a);
    const name = (p: EnvoyPlan) => p.match('d', [{ key: 'path', value: '/z' }])?.policy;
    expect(name(b)).toBe(name(a));
    const c = new EnvoyPlan(config(tree.replace('requests_per_unit: 4', 'requests_per_unit: 5')), b);
    expect(name(c)).not.toBe(name(b));
    expect(name(c)?.quota).toBe(5);
  });

  it('keeps a bounded table of limit overrides that never refuses one, and refuses unknown units', () => {
    const plan = new EnvoyPlan(config(tree));
    expect(plan.overridePolicy('d', undefined, 5, 'WEEK').window).toBe(604_800);
    expect(plan.overridePolicy('d', undefined, 5, 'WEEK')).toBe(
      plan.overridePolicy('d', undefined, 5, 'WEEK'),
    );
    expect(() => plan.overridePolicy('d', undefined, 5, 'FORTNIGHT')).toThrow(
      expect.objectContaining({ kind: 'invalid_argument', message: expect.stringContaining('FORTNIGHT') }),
    );
    const evicted: number[] = [];
    const onEvicted = (_p: unknown, total: number) => evicted.push(total);
    for (let i = 1; i <= 1100; i++) plan.overridePolicy('d', undefined, i, 'SECOND', { onEvicted });
    expect(evicted.length).toBeGreaterThan(0);
    expect(plan.overrideEvictions).toBe(evicted.length);
    // A full table evicts the least recently used override: a new one is still a limit, never none.
    expect(plan.overridePolicy('d', undefined, 5000, 'SECOND', { onEvicted })).toMatchObject({ quota: 5000 });
    expect(plan.overridePolicy('d', undefined, 0, 'MINUTE', { onEvicted })).toMatchObject({
      quota: 1,
      window: 60,
    });
  });

  it('names an override by its descriptor limit, not by the entries, so keys and values cannot grow the table', () => {
    const plan = new EnvoyPlan(config(tree));
    const any = plan.match('d', [{ key: 'path', value: '/z' }]);
    expect(plan.overridePolicy('d', any, 7, 'MINUTE').name).toBe('any');
    // No configured limit: one name per configured domain, whatever the keys; unknown domains share one.
    const a = plan.overridePolicy('d', plan.match('d', [{ key: 'x', value: '1' }]), 7, 'MINUTE');
    const b = plan.overridePolicy('d', plan.match('d', [{ key: 'y', value: '2' }]), 7, 'MINUTE');
    expect(a.name).toBe('d.override');
    expect(b).toBe(a);
    const u1 = plan.overridePolicy('u1', undefined, 7, 'MINUTE');
    expect(u1.name).toBe('envoy.override');
    expect(plan.overridePolicy('u2', undefined, 7, 'MINUTE')).toBe(u1);
  });

  it('keeps the shadow flag of the descriptor an override replaces', () => {
    const plan = new EnvoyPlan(
      config(`        - key: trial
          shadow_mode: true
          rate_limit: { requests_per_unit: 5, unit: hour }
        - key: trial
          value: enforced
          rate_limit: { requests_per_unit: 5, unit: hour }
`),
    );
    const shadow = plan.match('d', [{ key: 'trial', value: 'acme' }]);
    const enforced = plan.match('d', [{ key: 'trial', value: 'enforced' }]);
    expect(shadow?.shadow).toBe(true);
    expect(plan.overridePolicy('d', shadow, 0, 'HOUR').shadow).toBe(true);
    expect(plan.overridePolicy('d', enforced, 0, 'HOUR').shadow).toBe(false);
  });

  it('keeps override policies across a reload, so their buckets survive it', () => {
    const a = new EnvoyPlan(config(tree));
    const any = (p: EnvoyPlan) => p.match('d', [{ key: 'path', value: '/z' }]);
    const before = a.overridePolicy('d', any(a), 3, 'HOUR');
    const b = new EnvoyPlan(config(tree), a);
    expect(b.overridePolicy('d', any(b), 3, 'HOUR')).toBe(before);
  });

  it.each(['SECOND', 'MINUTE', 'HOUR', 'DAY', 'WEEK', 'MONTH', 'YEAR'])(
    'applies the largest uint32 override per %s at its rate, its burst bounded to what a bucket holds',
    (unit) => {
      const plan = new EnvoyPlan(config(tree));
      const p = plan.overridePolicy('d', undefined, 4_294_967_295, unit);
      expect(p?.quota).toBe(4_294_967_295);
      expect(p?.burst).toBeGreaterThan(200_000);
      expect(p?.burst).toBeLessThanOrEqual(4_294_967_295);
      // The bound definePolicy holds every bucket to: one more token would not be exact.
      const units = (p?.window ?? 0) * 1000;
      expect((p?.burst ?? 0) * units + 4_294_967_295).toBeLessThanOrEqual(Number.MAX_SAFE_INTEGER);
      // Bounded only where the whole quota does not fit (an hour and longer), and then to the largest that does.
      if (unit === 'SECOND' || unit === 'MINUTE') expect(p?.burst).toBe(4_294_967_295);
      else expect(((p?.burst ?? 0) + 1) * units + 4_294_967_295).toBeGreaterThan(Number.MAX_SAFE_INTEGER);
    },
  );

  it('reads a zero override as the strictest limit it can hold, one per unit, and refuses what is no uint32', () => {
    const plan = new EnvoyPlan(config(tree));
    expect(plan.overridePolicy('d', undefined, 0, 'SECOND')).toMatchObject({ quota: 1, burst: 1, window: 1 });
    expect(plan.overridePolicy('d', undefined, 0, 'SECOND')).toBe(
      plan.overridePolicy('d', undefined, 1, 'SECOND'),
    );
    for (const bad of [-1, 1.5, 4_294_967_296, Number.NaN])
      expect(() => plan.overridePolicy('d', undefined, bad, 'SECOND'), String(bad)).toThrow(
        /requests_per_unit/,
      );
  });
});
