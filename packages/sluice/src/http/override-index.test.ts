import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { checkOverridePattern, keyAsPattern, type OverrideRule, parseOverride } from '../core/index.js';
import { inRanges, parseIpRange } from './ip-address.js';
import { deriveKey } from './keys.js';
import { canonicalOverridePattern, OverrideIndex, overridePattern } from './override-index.js';

const NOW = 1_000_000;
const ADDRESSES = ['10.0.0.1', '10.0.1.7', '10.9.0.1', '192.0.2.5', '2001:db8::1', '2001:db8:0:1::9'];
const RANGES = ['10.0.0.0/8', '10.0.0.0/16', '10.0.0.0/24', '192.0.2.0/24', '2001:db8::/32', '2001:db8::/64'];
const KEYS = ADDRESSES.map((a) => `ip:${a}`).concat(['tenant:acme:client:web', 'tenant:acme:user:1']);
const PATTERNS = [
  ...RANGES.map((r) => `ip:${r}`),
  ...KEYS,
  'ip:10.*',
  'ip:*',
  'tenant:acme',
  'tenant:acme:client:*',
  'tenant:b*',
];
const TENANTS = [undefined, 'acme', 'beta'];

/** Whether a rule's pattern takes in a bucket key, client IP or the caller's whole tenant, read from the rule alone. */
function covers(rule: OverrideRule, key: string, ip: string, tenant: string | undefined): boolean {
  const p = overridePattern(rule.pattern);
  if (p.kind === 'range') return inRanges(ip, [parseIpRange(rule.pattern.slice(3))!]);
  if (p.kind === 'address') return ip === p.value;
  if (p.kind === 'exact') return key === p.value;
  return key.startsWith(p.value) || (tenant !== undefined && `tenant:${tenant}:`.startsWith(p.value));
}

const rule = fc.record({
  pattern: fc.constantFrom(...PATTERNS),
  scope: fc.constantFrom('none', 'policy', 'other-policy', 'tier', 'other-tier'),
  ttl: fc.option(fc.integer({ min: 1, max: 3 })),
  block: fc.constantFrom(403, 429),
});

describe('OverrideIndex', () => {
  it('finds, for any key and client IP asked any number of times, a rule of the narrowest kind that applies', () => {
    fc.assert(
      fc.property(
        fc.array(rule, { maxLength: 12 }),
        fc.array(
          fc.record({
            at: fc.nat(KEYS.length - 1),
            ip: fc.constantFrom(...ADDRESSES),
            tenant: fc.constantFrom(...TENANTS),
            late: fc.boolean(),
          }),
          {
            minLength: 1,
            maxLength: 20,
          },
        ),
        (specs, asks) => {
          const rules = specs.map((s) =>
            parseOverride(
              {
                pattern: s.pattern,
                reason: 'test',
                block: s.ttl === null ? 403 : s.block,
                ...(s.ttl === null ? {} : { ttlSeconds: s.ttl }),
                ...(s.scope === 'policy'
                  ? { policy: 'p' }
                  : s.scope === 'other-policy'
                    ? { policy: 'q' }
                    : {}),
                ...(s.scope === 'tier' ? { tier: 't' } : s.scope === 'other-tier' ? { tier: 'u' } : {}),
              },
              NOW,
              'test',
            ),
          );
          const index = new OverrideIndex(rules);
          for (const ask of asks) {
            const key = KEYS[ask.at];
            const now = ask.late ? NOW + 2500 : NOW;
            const found = index.find(key, 'p', 't', ask.ip, () => now, ask.tenant);
            const applies = rules.filter(
              (r) =>
                covers(r, key, ask.ip, ask.tenant) &&
                (r.expiresAt ?? Number.POSITIVE_INFINITY) > now &&
                (r.policy === undefined || r.policy === 'p') &&
                (r.tier === undefined || r.tier === 't'),
            );
            if (applies.length === 0) {
              expect(found).toBeUndefined();
              continue;
            }
            expect(found).toBeDefined();
            expect(applies).toContain(found?.rule);
            // Nothing that applies is narrower than the rule found.
            // Exact keys and single addresses, then ranges (longer first), then prefixes (longer first).
            const rank = (r: OverrideRule) => {
              const p = overridePattern(r.pattern);
              let narrow = 0;
              if (p.kind === 'exact' || p.kind === 'address') narrow = 3_000;
              else if (p.kind === 'prefix') narrow = p.value.length;
              else {
                const bits = p.range.kind === 'ipv4' ? p.range.bits + 96 : p.range.bits;
                narrow = bits === 128 ? 3_000 : 1_000 + bits;
              }
              return narrow * 3 + (r.policy !== undefined ? 2 : r.tier !== undefined ? 1 : 0);
            };
            expect(Math.max(...applies.map(rank))).toBe(rank(found!.rule));
          }
        },
      ),
      { numRuns: 400 },
    );
  });

  it('ranks an address range above a key prefix and one address as an exact key, whatever the order of the rules', () => {
    const rules = [
      { pattern: 'ip:*', unlimited: true },
      { pattern: 'ip:203.0.113.0/24', block: 403 },
      { pattern: 'ip:203.0.113.9', unlimited: true },
      { pattern: 'ip:2001:db8::1', block: 429, ttlSeconds: 60 },
      { pattern: 'ip:2001:db8::/32', unlimited: true },
    ].map((r) => parseOverride({ ...r, reason: 'test' }, NOW, 'test'));
    for (const order of [rules, [...rules].reverse()]) {
      const index = new OverrideIndex(order);
      const find = (key: string, ip: string) => index.find(key, 'p', undefined, ip, () => NOW)?.rule.pattern;
      // A block of a range is not lifted by an override of every address...
      expect(find('ip:203.0.113.7', '203.0.113.7')).toBe('ip:203.0.113.0/24');
      // ...but one address inside it can be let through by name.
      expect(find('ip:203.0.113.9', '203.0.113.9')).toBe('ip:203.0.113.9');
      // One IPv6 address (kept as its /128 range) outranks the /32 and the prefix.
      expect(find('ip:2001:db8::/64', '2001:db8::1')).toBe('ip:2001:db8::1');
      expect(find('ip:2001:db8::/64', '2001:db8::2')).toBe('ip:2001:db8::/32');
      expect(find('ip:192.0.2.1', '192.0.2.1')).toBe('ip:*');
    }
  });

  it('parses a client IP once for all its range rules and policies', () => {
    const rules = RANGES.map((r) =>
      parseOverride({ pattern: `ip:${r}`, block: 403, policy: 'p', reason: 'test' }, NOW, 'test'),
    );
    const index = new OverrideIndex(rules);
    // A value that is not an address is in no range, and is no error.
    expect(index.find('ip:unknown', 'p', undefined, 'not an address', () => NOW)).toBeUndefined();
    // The narrowest range the address is in.
    expect(index.find('ip:10.0.0.1', 'p', undefined, '10.0.0.1', () => NOW)?.rule.pattern).toBe(
      'ip:10.0.0.0/24',
    );
    expect(index.find('ip:10.9.0.1', 'p', undefined, '10.9.0.1', () => NOW)?.rule.pattern).toBe(
      'ip:10.0.0.0/8',
    );
    expect(index.find('ip:10.0.0.1', 'q', undefined, '10.0.0.1', () => NOW)).toBeUndefined();
    expect(index.find('ip:2001:db8::/64', 'p', undefined, '2001:db8::1', () => NOW)?.rule.pattern).toBe(
      'ip:2001:db8::/64',
    );
  });
});

describe('overridePattern and canonicalOverridePattern on patterns naming an address', () => {
  it.each([
    'ip:203.0.113.9',
    'ip:unknown',
    'ip:*',
    'ip:10.*',
    'ip:10.0.0.0/8',
    'ip:2001:db8::/64',
    'ip:2001:db8::1/128',
    'tenant:acme',
    'tenant:acme:client:*',
    'apikey:AbCdEfGhIjKlMnOpQr_-12',
    'custom:Mixed%3ACase',
    'tenant:#AbCdEfGhIjKlMnOpQr_-12',
  ])('accepts %s as it is', (pattern) => {
    expect(canonicalOverridePattern(pattern)).toBe(pattern);
    expect(canonicalOverridePattern(pattern, { lowerCaseTenant: true })).toBe(pattern);
  });

  it.each([
    // The gateway unmaps IPv4-mapped clients, so the key is the IPv4 one.
    ['ip:::ffff:1.2.3.4', 'ip:1.2.3.4'],
    ['ip:::FFFF:7f00:1', 'ip:127.0.0.1'],
    // Zero and one read alike in octal and decimal: the address is unambiguous.
    ['ip:127.000.000.001', 'ip:127.0.0.1'],
    ['ip:2001:DB8:0:0::1', 'ip:2001:db8::1'],
    // A range as its network address, IPv6 in lower case and compressed (one range, one id).
    ['ip:198.18.60.9/24', 'ip:198.18.60.0/24'],
    ['ip:2001:DB8:60::/64', 'ip:2001:db8:60::/64'],
    ['ip:2001:db8:60:0::/64', 'ip:2001:db8:60::/64'],
    ['ip:2001:db8:60::1/64', 'ip:2001:db8:60::/64'],
    ['ip:::ffff:192.0.2.7/120', 'ip:192.0.2.0/24'],
    ['ip:10.1.2.3/0', 'ip:0.0.0.0/0'],
    // Tenants as keys hold them, in lower case; clients and users keep their case, escapes their upper-case hex.
    ['tenant:EPSILON', 'tenant:epsilon'],
    ['tenant:Zeta:client:*', 'tenant:zeta:client:*'],
    ['tenant:Zeta:client:Web', 'tenant:zeta:client:Web'],
    ['tenant:Ac*', 'tenant:ac*'],
    ['tenant:M%C3%9CLLER:user:Bob', 'tenant:m%C3%BCller:user:Bob'],
    ['tenant:Org%3AAcme%25X', 'tenant:org%3Aacme%25x'],
    ['tenant:Ab%c3%9c', 'tenant:ab%C3%BC'],
  ])('writes %s as %s', (pattern, canonical) => {
    expect(canonicalOverridePattern(pattern, { lowerCaseTenant: true })).toBe(canonical);
    if (!pattern.startsWith('tenant:')) expect(canonicalOverridePattern(pattern)).toBe(canonical);
  });

  it('reads a single address as that client address, matched whatever the bucket key (an IPv6 key is the /64)', () => {
    expect(overridePattern('ip:2001:DB8::1')).toEqual({ kind: 'address', value: '2001:db8::1' });
    expect(overridePattern('ip:::ffff:1.2.3.4')).toEqual({ kind: 'address', value: '1.2.3.4' });
    expect(overridePattern('ip:127.000.000.001')).toEqual({ kind: 'address', value: '127.0.0.1' });
    expect(overridePattern('ip:unknown')).toEqual({ kind: 'exact', value: 'ip:unknown' });
  });

  it.each([
    ['IP:127.0.0.1', 'pattern must be written with its kind in lower case (ip, tenant, '],
    ['Tenant:acme', 'got "Tenant:acme"'],
    ['ip:010.0.0.1', 'pattern must be an IPv4 address without leading zeros (ip:10.0.0.1'],
    ['ip:1.2.3', 'pattern must be an IP address, an address range such as ip:203.0.113.0/24'],
    ['ip:localhost', 'got "ip:localhost"'],
    ['ip:1.2.3.256', 'got "ip:1.2.3.256"'],
  ])('refuses %s, naming the pattern and what it expects', (pattern, message) => {
    expect(() => canonicalOverridePattern(pattern)).toThrow(message);
    expect(() => overridePattern(pattern)).toThrow(message);
  });

  it('finds a rule on a single IPv6 address for that client only, and a mapped one under the IPv4 key', () => {
    const rules = ['ip:2001:db8::1', 'ip:::ffff:192.0.2.5', 'ip:127.000.000.001'].map((pattern) =>
      parseOverride({ pattern, block: 403, reason: 'test' }, NOW, 'test'),
    );
    const index = new OverrideIndex(rules);
    const at = () => NOW;
    expect(index.find('ip:2001:db8::/64', 'p', undefined, '2001:db8::1', at)?.rule.pattern).toBe(
      'ip:2001:db8::1',
    );
    expect(index.find('ip:2001:db8::/64', 'p', undefined, '2001:db8::2', at)).toBeUndefined();
    expect(index.find('ip:192.0.2.5', 'p', undefined, '192.0.2.5', at)?.rule.pattern).toBe(
      'ip:::ffff:192.0.2.5',
    );
    expect(index.find('ip:127.0.0.1', 'p', undefined, '127.0.0.1', at)?.rule.pattern).toBe(
      'ip:127.000.000.001',
    );
  });
});

describe('rules on one address, matched by the client IP whatever the bucket key', () => {
  const at = () => NOW;
  const KEYS_OF_ONE_CLIENT = ['ip:203.0.113.9', 'apikey:AbCdEfGhIjKlMnOpQr_-12', 'tenant:acme:client:web'];

  it.each(['ip:203.0.113.9', 'ip:::ffff:203.0.113.9', 'ip:203.0.113.9/32'])(
    'finds %s for every key of a client at 203.0.113.9, and for no other address',
    (pattern) => {
      const index = new OverrideIndex([parseOverride({ pattern, block: 403, reason: 'test' }, NOW, 'test')]);
      for (const key of KEYS_OF_ONE_CLIENT) {
        expect(index.find(key, 'p', undefined, '203.0.113.9', at)?.rule.pattern).toBe(pattern);
        expect(index.find(key, 'p', undefined, '::ffff:203.0.113.9', at)?.rule.pattern).toBe(pattern);
        expect(index.find(key, 'p', undefined, '203.0.113.10', at)).toBeUndefined();
      }
    },
  );

  it('finds single addresses among many without a scan, narrowest scope first, and follows removals', () => {
    const rules = Array.from({ length: 2000 }, (_, i) =>
      parseOverride({ pattern: `ip:10.0.${i >> 8}.${i & 255}`, block: 403, reason: 'test' }, NOW, 'test'),
    );
    rules.push(
      parseOverride({ pattern: 'ip:10.0.0.7', quota: 5, window: 60, policy: 'p', reason: 't' }, NOW, 'x'),
    );
    const index = new OverrideIndex(rules);
    expect(index.find('apikey:k', 'p', undefined, '10.0.0.7', at)?.rule.effect).toBe('limit');
    expect(index.find('apikey:k', 'q', undefined, '10.0.0.7', at)?.rule.effect).toBe('block');
    expect(index.find('apikey:k', 'q', undefined, '10.0.7.207', at)?.rule.pattern).toBe('ip:10.0.7.207');
    index.apply([{ id: 'ip:10.0.7.207', rule: undefined }]);
    expect(index.find('apikey:k', 'q', undefined, '10.0.7.207', at)).toBeUndefined();
    expect(index.find('ip:unknown', 'q', undefined, undefined, at)).toBeUndefined();
  });
});

describe('overridePattern on patterns no bucket key can match', () => {
  const HASH = 'AbCdEfGhIjKlMnOpQr_-12';

  it.each([
    'ip:*',
    'i*',
    'ip:0.0.0.0/0',
    'te*',
    'tenant:*',
    'tenant:ac*',
    'tenant:acme:*',
    'tenant:acme:cl*',
    'tenant:acme:client:*',
    'tenant:acme:user:bob',
    'tenant:acme:user:b*',
    'tenant:org%3Aacme',
    'tenant:50%25off',
    'tenant:50%*',
    'tenant:50%3*',
    `apikey:${HASH}`,
    'apikey:AbC*',
    'apikey:*',
    'principal:alice',
    'principal:tenant%3Aacme%3Auser%3Abob',
    'param:orgId:acme',
    'param:orgId:*',
    'custom:Mixed%3ACase',
    'device:d1',
    'token:t1',
    'connection:c',
    'agent:a',
    'human:h',
    'host:api.example.com',
    'webhook:w-1',
    'ip:unknown',
    'ip:unk*',
    'ip:2001:db8::/64',
    'ip:2001:db8:*',
  ])('accepts %s, which names keys the limiter makes', (pattern) => {
    expect(canonicalOverridePattern(pattern)).toBe(pattern);
  });

  it.each([
    // A part holding ":" or "%" is written escaped in every key: the escaped form is suggested.
    ['tenant:org:acme', 'tenant:org%3Aacme'],
    ['tenant:a:b', 'tenant:a%3Ab'],
    ['tenant:50%off', 'tenant:50%25off'],
    ['custom:Mixed:Case', 'custom:Mixed%3ACase'],
    ['principal:user:*', 'principal:user%3A*'],
    ['tenant:acme:client:web:1', 'tenant:acme:client:web%3A1'],
    // Empty parts.
    ['tenant:', 'a tenant name after tenant:'],
    ['tenant:acme:', 'tenant:<t>, tenant:<t>:client:<c> or tenant:<t>:user:<u>'],
    ['tenant:acme:client:', 'a name after tenant:acme:client:'],
    ['tenant::*', 'a tenant name after tenant:'],
    ['apikey:', 'apikey:<hash>'],
    ['principal:', 'a value after principal:'],
    ['param:orgId', 'param:<name>:<value>'],
    // No kind, or one no key starts with.
    ['foo', 'a bucket key starting with its kind (ip, tenant, principal, apikey'],
    ['foo*', 'a prefix of a bucket key'],
    ['acme:ci-bot', 'a bucket key starting with its kind'],
    ['tennant:acme', 'tenant:acme if tennant is a typo'],
    ['user:bob', 'tenant:<t>:user:bob'],
    ['client:web', 'tenant:<t>:client:web'],
    ['tenant:acme:clinet:*', 'tenant:acme:client:* if clinet is a typo'],
    ['tenant:acme:team:x', 'tenant:<t>, tenant:<t>:client:<c> or tenant:<t>:user:<u>'],
    // Values that no key of the kind holds.
    ['apikey:zz', 'apikey:<hash>, the 22 base64url characters'],
    ['apikey:zz:*', 'apikey:<hash>'],
    ['ip:zz*', 'ip:'],
    ['tenant:acme%3a*', 'tenant:acme%253a*'],
  ])('refuses %s, naming the pattern and what it expects (%s)', (pattern, message) => {
    for (const f of [canonicalOverridePattern, overridePattern]) {
      let thrown: unknown;
      try {
        f(pattern);
      } catch (e) {
        thrown = e;
      }
      expect(thrown).toMatchObject({ code: 'ERR_INVALID_OPTION', details: { option: 'pattern' } });
      expect((thrown as Error).message).toContain(message);
      expect((thrown as Error).message).toMatch(/^pattern must /);
      expect((thrown as Error).message).toContain(`got ${JSON.stringify(pattern)}`);
    }
  });

  it('accepts every key the limiter derives, and every prefix of it before *, and matches them', () => {
    const part = fc.string({
      unit: fc.constantFrom('a', 'B', '1', ':', '%', '-', '.', '#', '_'),
      minLength: 1,
      maxLength: 8,
    });
    const specs = [
      'principal',
      'tenant-client',
      'tenant-user',
      'api-key',
      'device',
      'webhook',
      'host',
      'caller',
    ] as const;
    fc.assert(
      fc.property(
        fc.constantFrom(...specs, 'param', 'custom'),
        fc.record({
          tenant: part,
          client: part,
          user: part,
          principal: part,
          apiKey: part,
          device: part,
          host: part,
        }),
        part,
        fc.nat(),
        (spec, identity, value, cut) => {
          const request = {
            method: 'GET',
            path: '/',
            headers: {},
            remoteAddress: undefined,
            identity,
            params: { webhook_id: value, orgId: value },
          };
          const key =
            spec === 'param'
              ? deriveKey({ param: 'orgId' }, request, '192.0.2.1')
              : spec === 'custom'
                ? deriveKey(() => value, request, '192.0.2.1')
                : deriveKey(spec, request, '192.0.2.1');
          expect(canonicalOverridePattern(key)).toBe(key);
          const prefix = key.slice(0, 1 + (cut % key.length));
          if (/^[:]*$/.test(prefix)) return;
          expect(() => overridePattern(`${prefix}*`)).not.toThrow();
          const rules = [key, `${prefix}*`].map((pattern) =>
            parseOverride({ pattern, block: 403, reason: 'test' }, NOW, 'test'),
          );
          for (const r of rules) {
            expect(new OverrideIndex([r]).find(key, 'p', undefined, undefined, () => NOW)?.rule).toBe(r);
          }
        },
      ),
      { numRuns: 300 },
    );
  });

  it('skips a stored rule whose pattern is now refused, and applies the others', () => {
    const good = parseOverride({ pattern: 'tenant:acme', block: 403, reason: 'test' }, NOW, 'test');
    const stored = ['tenant:org:acme', 'foo', 'user:bob', 'apikey:zz', 'tenant:'].map((pattern) => ({
      ...good,
      pattern,
      id: pattern,
    }));
    const index = new OverrideIndex([...stored, good]);
    expect(index.find('tenant:acme:client:web', 'p', undefined, undefined, () => NOW)?.rule).toBe(good);
    expect(index.find('foo', 'p', undefined, undefined, () => NOW)).toBeUndefined();
    expect(index.find('user:bob', 'p', undefined, undefined, () => NOW)).toBeUndefined();
  });
});

describe('patterns of keys holding spaces, controls, non-ASCII characters or *', () => {
  const find = (index: OverrideIndex, key: string) =>
    index.find(key, 'p', undefined, undefined, () => NOW)?.rule.pattern;
  const block = (pattern: string) => parseOverride({ pattern, block: 403, reason: 'test' }, NOW, 'test');

  it.each([
    ['principal:john doe', 'principal:john%20doe'],
    ['tenant:müller:client:web', 'tenant:m%C3%BCller:client:web'],
    ['tenant:acme:user:a\u0007b', 'tenant:acme:user:a%07b'],
    ['principal:\u202eevil', 'principal:%E2%80%AEevil'],
    ['principal:😀', 'principal:%F0%9F%98%80'],
    ['principal:a*b', 'principal:a%2Ab'],
    ['tenant:50%25 off:client:a%3Ab', 'tenant:50%25%20off:client:a%3Ab'],
  ])('blocks the key %j exactly with the pattern %s', (key, pattern) => {
    expect(keyAsPattern(key)).toBe(pattern);
    expect(canonicalOverridePattern(pattern)).toBe(pattern);
    const index = new OverrideIndex([block(pattern)]);
    expect(find(index, key)).toBe(pattern);
    expect(find(index, `${key}x`)).toBeUndefined();
  });

  it('matches a prefix written with escapes, and writes lower-case hex as upper case (one key, one id)', () => {
    expect(find(new OverrideIndex([block('principal:john%20*')]), 'principal:john doe')).toBe(
      'principal:john%20*',
    );
    expect(canonicalOverridePattern('tenant:m%c3%bcller')).toBe('tenant:m%C3%BCller');
    expect(find(new OverrideIndex([block('tenant:m%c3%bcller')]), 'tenant:müller:client:web')).toBe(
      'tenant:m%c3%bcller',
    );
  });

  it.each([
    ['principal:john doe', 'principal:john%20doe'],
    ['tenant:müller', 'tenant:m%C3%BCller'],
  ])('refuses %j, naming its escaped form', (pattern, written) => {
    let thrown: unknown;
    try {
      canonicalOverridePattern(checkOverridePattern(pattern));
    } catch (e) {
      thrown = e;
    }
    expect(thrown).toMatchObject({ code: 'ERR_INVALID_OPTION', details: { option: 'pattern' } });
    expect((thrown as Error).message).toContain(written);
  });

  it.each(['principal:%C3', 'principal:%C3*', 'principal:%FF'])(
    'refuses %s: an escape that is no whole UTF-8 character',
    (pattern) => {
      expect(() => canonicalOverridePattern(pattern)).toThrow(/UTF-8/);
    },
  );

  it('names any key the limiter derives from any identity, and only it', () => {
    const part = fc.string({ unit: 'binary', minLength: 1, maxLength: 6 });
    fc.assert(
      fc.property(
        fc.constantFrom('principal', 'tenant-client', 'tenant-user', 'device', 'host', 'caller'),
        fc.record({ tenant: part, client: part, user: part, principal: part, device: part, host: part }),
        (spec, identity) => {
          const request = { method: 'GET', path: '/', headers: {}, remoteAddress: undefined, identity };
          const key = deriveKey(spec as 'principal', request, '192.0.2.1');
          const pattern = keyAsPattern(key);
          if (pattern === undefined) return; // a lone surrogate: no text names it
          expect(canonicalOverridePattern(pattern)).toBe(pattern);
          const index = new OverrideIndex([block(pattern)]);
          expect(find(index, key)).toBe(pattern);
          expect(find(index, `${key} `)).toBeUndefined();
        },
      ),
      { numRuns: 500 },
    );
  });
});

describe("rules on a whole tenant, matched by the caller's tenant whatever its bucket key", () => {
  const index = (...specs: Record<string, unknown>[]) =>
    new OverrideIndex(
      specs.map((s) => parseOverride({ reason: 'test', ...s } as never, NOW, 'test')),
      'rl:',
    );
  const find = (ix: OverrideIndex, key: string, tenant: string | undefined, ip = '203.0.113.7') =>
    ix.find(`rl:${key}`, 'p', undefined, ip, () => NOW, tenant)?.rule.pattern;

  it('finds tenant:<t>, tenant:<t>:* and shorter prefixes for a key of another kind, and only them', () => {
    for (const pattern of ['tenant:acme', 'tenant:acme:*', 'tenant:ac*', 'tenant:*']) {
      const ix = index({ pattern, block: 403 });
      expect(find(ix, 'ip:203.0.113.7', 'acme'), pattern).toBe(pattern);
      expect(find(ix, 'apikey:AbCdEfGhIjKlMnOpQr_-12', 'acme'), pattern).toBe(pattern);
      // No tenant, or a tenant the pattern does not cover: the key alone decides, as before.
      expect(find(ix, 'ip:203.0.113.7', undefined), pattern).toBeUndefined();
      expect(find(ix, 'ip:203.0.113.7', 'beta'), pattern).toBe(pattern === 'tenant:*' ? pattern : undefined);
    }
    // A rule narrower than the tenant names a client or user the caller's key does not have.
    const narrow = index(
      { pattern: 'tenant:acme:client:*', block: 403 },
      { pattern: 'tenant:acme:user:u1', block: 403 },
      { pattern: 'tenant:acmex', block: 403 },
    );
    expect(find(narrow, 'ip:203.0.113.7', 'acme')).toBeUndefined();
    expect(find(narrow, 'ip:203.0.113.7', '')).toBeUndefined();
  });

  it('reads the tenant as keys write it: ":" and "%" escaped, other characters as they are', () => {
    const ix = index(
      { pattern: 'tenant:org%3Aacme', block: 403 },
      { pattern: 'tenant:web%20app', block: 429, ttlSeconds: 60 },
    );
    expect(find(ix, 'ip:203.0.113.7', 'org:acme')).toBe('tenant:org%3Aacme');
    expect(find(ix, 'ip:203.0.113.7', 'org')).toBeUndefined();
    expect(find(ix, 'ip:203.0.113.7', 'web app')).toBe('tenant:web%20app');
  });

  it('ranks a tenant rule as the prefix it is, beside the rules of the key and of the address', () => {
    const ix = index(
      { pattern: 'tenant:acme', block: 403 },
      { pattern: 'ip:*', unlimited: true },
      { pattern: 'ip:198.51.100.9', unlimited: true },
      { pattern: 'ip:192.0.2.0/24', unlimited: true },
      { pattern: 'tenant:acme', policy: 'p', quota: 5, window: 60 },
    );
    // The tenant (a longer prefix, and a policy scope) outranks ip:*; an exact key or an address range lets
    // one client through by name, as it does for the tenant's own keys.
    expect(find(ix, 'ip:203.0.113.7', 'acme')).toBe('tenant:acme');
    expect(ix.find('rl:ip:203.0.113.7', 'p', undefined, '203.0.113.7', () => NOW, 'acme')?.rule.id).toBe(
      'tenant:acme policy=p',
    );
    expect(ix.find('rl:ip:203.0.113.7', 'q', undefined, '203.0.113.7', () => NOW, 'acme')?.rule.id).toBe(
      'tenant:acme',
    );
    expect(find(ix, 'ip:198.51.100.9', 'acme', '198.51.100.9')).toBe('ip:198.51.100.9');
    expect(find(ix, 'ip:192.0.2.1', 'acme', '192.0.2.1')).toBe('ip:192.0.2.0/24');
    expect(find(ix, 'ip:203.0.113.7', undefined)).toBe('ip:*');
  });

  it('follows rules set and removed one by one, and skips an expired one', () => {
    const ix = index({ pattern: 'ip:10.0.0.1', block: 403 });
    expect(find(ix, 'ip:203.0.113.7', 'acme')).toBeUndefined();
    const rule = parseOverride(
      { pattern: 'tenant:acme', block: 429, ttlSeconds: 1, reason: 't' },
      NOW,
      'test',
    );
    ix.apply([{ id: rule.id, rule }]);
    expect(find(ix, 'ip:203.0.113.7', 'acme')).toBe('tenant:acme');
    expect(ix.find('rl:ip:203.0.113.7', 'p', undefined, undefined, () => NOW + 1000, 'acme')).toBeUndefined();
    ix.apply([{ id: rule.id, rule: undefined }]);
    expect(find(ix, 'ip:203.0.113.7', 'acme')).toBeUndefined();
  });
});
