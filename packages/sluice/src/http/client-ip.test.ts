import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { createClientIpResolver } from './client-ip.js';
import { forwardedForHops, forwardedHops } from './forwarded.js';
import { ipKeyOf, normalizeIp } from './ip-address.js';

describe('normalizeIp and ipKeyOf', () => {
  it.each([
    ['192.0.2.1', '192.0.2.1', '192.0.2.1'],
    ['::ffff:192.0.2.1', '192.0.2.1', '192.0.2.1'],
    ['::FFFF:192.0.2.1', '192.0.2.1', '192.0.2.1'],
    ['2001:DB8:1:2:3:4:5:6', '2001:db8:1:2:3:4:5:6', '2001:db8:1:2::/64'],
    ['2001:db8::1', '2001:db8::1', '2001:db8::/64'],
    ['fe80::1%eth0', 'fe80::1', 'fe80::/64'],
    ['::1', '::1', '::/64'],
    // RFC 5952 text: the longest run of zero groups is the one shortened.
    ['2001:db8:0:1::5', '2001:db8:0:1::5', '2001:db8:0:1::/64'],
    ['1:0:0:2:0:0:0:3', '1:0:0:2::3', '1:0:0:2::/64'],
    // An IPv4 tail right after `::` (IPv4-compatible forms): valid addresses that ipaddr.js alone refuses.
    ['::1.2.3.4', '::102:304', '::/64'],
    ['::0.0.0.0', '::', '::/64'],
    ['1:2:3:4:5::1.2.3.4', '1:2:3:4:5:0:102:304', '1:2:3:4::/64'],
    ['0:0:1:1:0:0:1:0', '::1:1:0:0:1:0', '0:0:1:1::/64'],
    ['0:1::0:0:0.0.0.0', '0:1::', '0:1::/64'],
    ['fe80::1.2.3.4%eth0', 'fe80::102:304', 'fe80::/64'],
    // Zone ids node:net accepts and ipaddr.js does not: the zone is dropped before parsing.
    ['fe80::1%eth-0', 'fe80::1', 'fe80::/64'],
    ['fe80::1%en0.1', 'fe80::1', 'fe80::/64'],
    ['2001:db8::1%a:b', '2001:db8::1', '2001:db8::/64'],
  ])('%s is %s, keyed %s', (input, canonical, key) => {
    expect(normalizeIp(input)).toBe(canonical);
    expect(ipKeyOf(input)).toBe(key);
  });

  it.each(['', 'x', '01.2.3.4', '0x7f.0.0.1', '1.2.3', '[::1]', '1.2.3.4:80', '999.1.1.1'])(
    'rejects %j',
    (v) => {
      expect(normalizeIp(v)).toBeUndefined();
      expect(ipKeyOf(v)).toBeUndefined();
    },
  );
});

describe('normalizeIp on any address node:net accepts', () => {
  it('never throws, and gives every spelling of one address the same text, naming that address (property)', () => {
    const host = (a: string) => new URL(`http://[${a}]`).hostname.slice(1, -1);
    const zone = fc.string({
      unit: fc.constantFrom('a', 'Z', '0', '9', '-', '.', ':'),
      minLength: 1,
      maxLength: 6,
    });
    fc.assert(
      fc.property(fc.ipV6(), fc.option(zone), (address, z) => {
        const v = z === null ? address : `${address}%${z}`;
        const out = normalizeIp(v) as string;
        const url = host(address);
        // A mapped address is unmapped to IPv4; every other one stays the same IPv6 address.
        expect(out.includes(':') ? out : host(`::ffff:${out}`)).toBe(url);
        expect(normalizeIp(url)).toBe(out);
        expect(ipKeyOf(v)).toBe(out.includes(':') ? ipKeyOf(url) : out);
      }),
      { numRuns: 2000 },
    );
  });
});

describe('forwarding header readers', () => {
  it('read X-Forwarded-For right to left with ports and brackets stripped', () => {
    expect(forwardedForHops('198.51.100.7, 10.0.0.1:8080 ,[2001:db8::1]:443')).toEqual([
      '2001:db8::1',
      '10.0.0.1',
      '198.51.100.7',
    ]);
    expect(forwardedForHops('a,,b')).toEqual(['b', '', 'a']);
  });

  it('read RFC 7239 Forwarded for= nodes right to left', () => {
    expect(
      forwardedHops(
        'for=192.0.2.43, for="[2001:db8:cafe::17]:4711";proto=https, proto=http;For=198.51.100.17;by=x',
      ),
    ).toEqual(['198.51.100.17', '2001:db8:cafe::17', '192.0.2.43']);
    expect(forwardedHops('for=unknown, for="_hidden"')).toEqual(['_hidden', 'unknown']);
    expect(forwardedHops('for="\\"x";by=1')).toEqual(['"x']);
    expect(forwardedHops('for="unterminated')).toEqual(['']);
    expect(forwardedHops('proto=https')).toEqual(['']);
  });

  it('read the elements proxies appended whatever a client wrote before them, unclosed quotes included', () => {
    expect(forwardedHops('for=x;y=", for=198.51.100.1')).toEqual(['198.51.100.1', '']);
    expect(forwardedHops('for="a, for=198.51.100.1, for="[2001:db8::1]:80"')).toEqual([
      '2001:db8::1',
      '198.51.100.1',
      '',
    ]);
    // A comma inside a quoted value of a well-formed element does not split it.
    expect(forwardedHops('for=192.0.2.1;by="a,b\\\\", for=198.51.100.2')).toEqual([
      '198.51.100.2',
      '192.0.2.1',
    ]);
  });

  it('never throw on arbitrary input', () => {
    fc.assert(
      fc.property(fc.string({ maxLength: 200 }), (s) => {
        expect(Array.isArray(forwardedHops(s))).toBe(true);
        expect(Array.isArray(forwardedForHops(s))).toBe(true);
      }),
    );
  });
});

describe('createClientIpResolver', () => {
  it('ignores forwarding headers without trusted proxies', () => {
    const ip = createClientIpResolver();
    expect(ip('203.0.113.9', { 'x-forwarded-for': '198.51.100.7' })).toBe('203.0.113.9');
    expect(ip('::ffff:203.0.113.9', {})).toBe('203.0.113.9');
    expect(ip(undefined, {})).toBeUndefined();
  });

  it('ignores forwarding headers from an untrusted peer', () => {
    const ip = createClientIpResolver({ trustedProxies: ['10.0.0.0/8'] });
    expect(ip('203.0.113.9', { 'x-forwarded-for': '198.51.100.7' })).toBe('203.0.113.9');
  });

  it('skips trusted hops from the right and stops at the first untrusted one', () => {
    const ip = createClientIpResolver({ trustedProxies: ['10.0.0.0/8', '2001:db8:ffff::/48'] });
    const h = { 'x-forwarded-for': '6.6.6.6, 198.51.100.7, 10.1.1.1, 10.2.2.2' };
    expect(ip('10.0.0.5', h)).toBe('198.51.100.7');
    expect(ip('::ffff:10.0.0.5', h)).toBe('198.51.100.7');
    expect(ip('2001:db8:ffff::1', { 'x-forwarded-for': '2001:db8:1::9' })).toBe('2001:db8:1::9');
    expect(ip('10.0.0.5', { 'x-forwarded-for': '10.0.0.6, 10.0.0.7' })).toBe('10.0.0.6');
    expect(ip('10.0.0.5', { 'x-forwarded-for': ['198.51.100.1', '198.51.100.2'] })).toBe('198.51.100.2');
    expect(ip('10.0.0.5', { 'x-forwarded-for': '198.51.100.1, garbage' })).toBe('10.0.0.5');
    expect(ip('10.0.0.5', {})).toBe('10.0.0.5');
  });

  it('reads only the configured header', () => {
    const xff = createClientIpResolver({ trustedProxies: ['loopback'] });
    const fwd = createClientIpResolver({ trustedProxies: ['loopback'], proxyHeader: 'forwarded' });
    const h = { 'x-forwarded-for': '198.51.100.1', forwarded: 'for="[2001:db8::5]:80"' };
    expect(xff('127.0.0.1', h)).toBe('198.51.100.1');
    expect(fwd('127.0.0.1', h)).toBe('2001:db8::5');
    expect(fwd('::1', { forwarded: 'for=unknown' })).toBe('::1');
  });

  it('reads Fetch Headers objects', () => {
    const ip = createClientIpResolver({ trustedProxies: ['uniquelocal'] });
    expect(ip('192.168.1.1', new Headers({ 'X-Forwarded-For': '198.51.100.3' }))).toBe('198.51.100.3');
  });

  it('rejects invalid options', () => {
    expect(() => createClientIpResolver({ trustedProxies: ['nope'] })).toThrow(/trustedProxies\[0\]/);
    expect(() => createClientIpResolver({ trustedProxies: 'loopback' as never })).toThrow(/trustedProxies/);
    expect(() => createClientIpResolver({ proxyHeader: 'x-real-ip' as never })).toThrow(/proxyHeader/);
  });

  it('resolves to the address a trusted proxy wrote in Forwarded, whatever the client wrote before it (property)', () => {
    const ip = createClientIpResolver({ trustedProxies: ['10.0.0.0/8'], proxyHeader: 'forwarded' });
    const node = fc.constantFrom(
      '198.51.100.1',
      '"198.51.100.1:4711"',
      '"[2001:db8::9]"',
      '"[2001:db8::9]:80"',
    );
    const junk = fc.stringMatching(/^[ -~]{0,40}$/);
    const own = fc.array(
      fc.constantFrom('for=', '"', ';', ',', '=', '\\', 'x', ' ', 'by="a,b"', 'proto=https'),
      {
        maxLength: 12,
      },
    );
    fc.assert(
      fc.property(junk, own, node, fc.boolean(), fc.boolean(), (text, parts, client, twoLines, second) => {
        const written = text + parts.join('');
        const appended = `for=${client};proto=https`;
        // A second trusted proxy appends its own element after the first one's.
        const hops = second ? [appended, 'for=10.0.0.7'] : [appended];
        const headers = twoLines
          ? { forwarded: [written, ...hops] }
          : { forwarded: `${written}, ${hops.join(', ')}` };
        const expected = client.includes('2001') ? '2001:db8::9' : '198.51.100.1';
        expect(ip('10.0.0.5', headers)).toBe(expected);
      }),
      { numRuns: 2000 },
    );
  });

  it('never throws and returns a valid address or undefined for any header', () => {
    const ip = createClientIpResolver({ trustedProxies: ['0.0.0.0/0', '::/0'] });
    fc.assert(
      fc.property(fc.string({ maxLength: 100 }), fc.constantFrom('10.0.0.1', '::1', 'x'), (h, peer) => {
        const r = ip(peer, { 'x-forwarded-for': h });
        expect(r === undefined || normalizeIp(r) === r).toBe(true);
      }),
    );
  });
});
