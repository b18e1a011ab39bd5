import fc from 'fast-check';
import { ipKey, normalizeIp } from 'sluice/http';
import { describe, expect, it } from 'vitest';
import { ClientAddresses, dottedQuadValue, withoutPort } from './client-addresses.js';

const address = fc.oneof(
  fc.ipV4(),
  fc.ipV4Extended(),
  fc.ipV6(),
  fc.tuple(fc.ipV4(), fc.nat(70000)).map(([ip, port]) => `${ip}:${port}`),
  fc.tuple(fc.ipV6(), fc.nat(70000)).map(([ip, port]) => `[${ip}]:${port}`),
  fc.string({ maxLength: 16 }),
  fc.constantFrom(
    '01.2.3.4',
    '1.2.3',
    '1.2.3.256',
    '1.2.3.4.5',
    '::ffff:1.2.3.4',
    '0.0.0.0',
    '255.255.255.255',
  ),
);

describe('client addresses', () => {
  it('gives what normalizeIp and ipKey give, for any text (property)', () => {
    const a = new ClientAddresses();
    fc.assert(
      fc.property(address, (s) => {
        const bare = normalizeIp(s) === undefined ? withoutPort(s) : undefined;
        const ip = normalizeIp(s) ?? (bare === undefined ? undefined : normalizeIp(bare));
        const found = a.lookup(s);
        expect(found ? { ip: a.ip, key: a.key } : undefined).toEqual(
          ip === undefined ? undefined : { ip, key: ipKey(ip) },
        );
      }),
      { numRuns: 2000 },
    );
  });

  it('finds an IPv4 address again after other lookups, and tells text that is no address', () => {
    const a = new ClientAddresses();
    const line = '203.0.113.100 - - [03/Dec/2026:06:00:00 +0000] "GET / HTTP/1.1" 200 1';
    expect(a.lookup(line.slice(0, 13))).toBe(true);
    expect([a.ip, a.key]).toEqual(['203.0.113.100', 'ip:203.0.113.100']);
    expect(a.lookup('198.51.100.1')).toBe(true);
    expect(a.lookup('no address')).toBe(false);
    expect(a.lookup(`${line} `.slice(0, 13))).toBe(true);
    expect([a.ip, a.key]).toEqual(['203.0.113.100', 'ip:203.0.113.100']);
  });

  it('reads an address written with its port or in brackets, as Envoy and load balancers log it', () => {
    const a = new ClientAddresses();
    const cases: [string, string | undefined][] = [
      ['10.0.0.1:34567', '10.0.0.1'],
      ['[2001:db8::1]:443', '2001:db8::1'],
      ['[::ffff:10.0.0.2]:80', '10.0.0.2'],
      ['[::1]', '::1'],
      ['2001:db8::1', '2001:db8::1'],
      ['10.0.0.1:', undefined],
      ['10.0.0.1:123456', undefined],
      ['[2001:db8::1]x', undefined],
      ['a.example.com', undefined],
      ['a.example.com:80', undefined],
    ];
    for (const [text, ip] of cases) {
      expect(a.lookup(text) ? a.ip : undefined, text).toBe(ip);
      if (ip !== undefined) expect(a.key).toBe(ipKey(ip));
    }
  });

  it('stays right past its size: every address still maps to itself after the table starts over', () => {
    const a = new ClientAddresses();
    const n = 200_000;
    const text = (i: number) => `10.${(i >>> 16) & 255}.${(i >>> 8) & 255}.${i & 255}`;
    for (let i = 0; i < n; i++) {
      expect(a.lookup(text(i))).toBe(true);
      expect(a.key).toBe(`ip:${text(i)}`);
    }
    for (let i = n - 10; i < n; i++) {
      a.lookup(text(i));
      expect([a.ip, a.key]).toEqual([text(i), `ip:${text(i)}`]);
    }
    // It started over at each 65,536 addresses: a slot read before a start may hold another address after it.
    expect(a.startedOver).toBe(Math.floor((n - 1) / 65_536));
  });

  it('looks up in batches as alone: every address of a batch touched first, then each looked up (property)', () => {
    // A batch of the replay touches its lines' slots, then looks them up, while lookups insert new addresses (and
    // start the table over at its size): the answers must be those of lookups alone, the places kept included.
    const batched = new ClientAddresses();
    const alone = new ClientAddresses();
    const repeated = fc.oneof(address, fc.constantFrom('203.0.113.7', '203.0.113.8', '10.0.0.1:80'));
    fc.assert(
      fc.property(fc.array(repeated, { maxLength: 40 }), (batch) => {
        const values = batch.map((s) => batched.touch(s));
        expect(values).toEqual(batch.map(dottedQuadValue));
        batch.forEach((s, i) => {
          const found = batched.lookup(s, values[i]);
          expect(found).toBe(alone.lookup(s));
          if (!found) return;
          expect([batched.ip, batched.key, batched.slot]).toEqual([alone.ip, alone.key, alone.slot]);
          if (batched.slot < 0) return;
          expect(batched.place(batched.slot)).toBe(alone.place(alone.slot));
          batched.keepPlace(batched.slot, i, 7);
          alone.keepPlace(alone.slot, i, 7);
        });
      }),
      { numRuns: 500 },
    );
    // Past the size (65,536 addresses), in batches of 30 touched first: the table starts over inside a batch.
    const text = (i: number) => `10.${(i >>> 16) & 255}.${(i >>> 8) & 255}.${i & 255}`;
    const differ: string[] = [];
    for (let from = 0; from < 70_000; from += 30) {
      const values = Array.from({ length: 30 }, (_, j) => batched.touch(text(from + j)));
      for (let j = 0; j < 30; j++) {
        const s = text(from + j);
        const found = batched.lookup(s, values[j]) && alone.lookup(s);
        if (!found || batched.key !== alone.key || batched.slot !== alone.slot || batched.ip !== s)
          differ.push(s);
      }
    }
    expect(differ).toEqual([]);
  });

  it('reads the number of a dotted quad and refuses every other form', () => {
    expect(dottedQuadValue('0.0.0.0')).toBe(0);
    expect(dottedQuadValue('255.255.255.255')).toBe(2 ** 32 - 1);
    expect(dottedQuadValue('192.0.2.1')).toBe(0xc0000201);
    for (const s of ['01.2.3.4', '1.2.3', '1.2.3.256', '1.2.3.4.5', '::ffff:1.2.3.4', '1..2.3', '1.2.3.', ''])
      expect(dottedQuadValue(s), s).toBe(-1);
    fc.assert(
      fc.property(fc.ipV4(), (s) => {
        const v = dottedQuadValue(s);
        expect(s.split('.').reduce((x, o) => x * 256 + Number(o), 0)).toBe(v);
      }),
    );
  });
});
