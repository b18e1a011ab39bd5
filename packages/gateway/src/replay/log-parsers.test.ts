import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { clfParser } from './clf-parser.js';
import { envoyParser } from './envoy-parser.js';
import { gatewayLogParser } from './gateway-log-parser.js';
import { fieldMap } from './json-fields.js';
import { jsonParser } from './json-parser.js';
import { detectFormat, logFormat } from './log-format.js';
import { LogRecord } from './log-record.js';
import { AnyTimeParser, ClfTimeParser, epochMs, IsoTimeParser } from './log-time.js';
import { pathTemplate } from './path-template.js';

function read(parse: (s: string, r: LogRecord) => boolean | 'skip', line: string) {
  const r = new LogRecord();
  const got = parse(line, r);
  return { got, ...r, identified: r.identified };
}

describe('access log times', () => {
  it('reads the NGINX time with its zone, caching the day without mixing days or zones', () => {
    const p = new ClfTimeParser();
    expect(p.parse('[10/Oct/2000:13:55:36 -0700]', 1)).toBe(Date.UTC(2000, 9, 10, 20, 55, 36));
    expect(p.parse('10/Oct/2000:13:55:37 -0700', 0)).toBe(Date.UTC(2000, 9, 10, 20, 55, 37));
    expect(p.parse('10/Oct/2000:13:55:37 +0000', 0)).toBe(Date.UTC(2000, 9, 10, 13, 55, 37));
    expect(p.parse('11/Oct/2000:00:00:00 +0000', 0)).toBe(Date.UTC(2000, 9, 11));
    for (const bad of [
      '10/Foo/2000:13:55:36 -0700',
      '10/Oct/2000:25:55:36 -0700',
      '10/Oct/2000 13:55:36 -0700',
      '10/Oct/2000:13:55',
    ])
      expect(p.parse(bad, 0)).toBeNaN();
  });

  it('reads ISO times with fractions and zones, and epoch numbers', () => {
    const p = new IsoTimeParser();
    expect(p.parse('2026-12-03T06:38:27Z')).toBe(Date.UTC(2026, 11, 3, 6, 38, 27));
    expect(p.parse('2026-12-03T06:38:27.5+01:00')).toBe(Date.UTC(2026, 11, 3, 5, 38, 27, 500));
    expect(p.parse('2026-12-03 06:38:27.123')).toBe(Date.UTC(2026, 11, 3, 6, 38, 27, 123));
    expect(p.parse('2026-12-03T06:38:27+0130')).toBe(Date.UTC(2026, 11, 3, 5, 8, 27));
    expect(p.parse('2026-12-03T06:38:27Zjunk')).toBeNaN();
    const any = new AnyTimeParser();
    expect(any.parse(1_764_743_907)).toBe(1_764_743_907_000);
    expect(any.parse('1764743907.250')).toBe(1_764_743_907_250);
    expect(any.parse(1_764_743_907_123)).toBe(1_764_743_907_123);
    expect(any.parse('03/Dec/2026:06:38:27 +0000')).toBe(Date.UTC(2026, 11, 3, 6, 38, 27));
    expect(any.parse('yesterday')).toBeNaN();
    expect(any.parse(undefined)).toBeNaN();
  });

  it('reads no epoch number beyond the years a log can hold (a Date would throw on it)', () => {
    const any = new AnyTimeParser();
    for (const v of [1e308, -1e308, 9e15, 8.64e15, 1e14, '1e308', Number.MAX_VALUE, -1])
      expect(any.parse(v)).toBeNaN();
    expect(epochMs(99_999_999_999)).toBe(99_999_999_999_000);
    expect(epochMs(99_999_999_999_999)).toBe(99_999_999_999_999);
    expect(() => new Date(epochMs(99_999_999_999_999)).toISOString()).not.toThrow();
  });

  it('never takes a time for the second of the line before when any part differs (property)', () => {
    // Per field, values that differ from one another in a single character, at every position of the time; each
    // line changes one field of the line before, so consecutive times differ in as little as one character.
    const two = ['10', '11', '20'];
    const fields = [
      two,
      ['Jan', 'Jun', 'Jul', 'Mar', 'May'],
      ['2000', '2001', '2010', '2100', '3000'],
      two,
      two,
      two,
      ['+0000', '-0100', '+0001', '+0010', '+0100', '+1000'],
    ];
    const text = (v: readonly number[]) => {
      const [d, mon, y, h, m, sec, z] = v.map((x, i) => fields[i][x % fields[i].length]);
      return `${d}/${mon}/${y}:${h}:${m}:${sec} ${z}`;
    };
    const change = fc.tuple(fc.nat(fields.length - 1), fc.nat(5));
    fc.assert(
      fc.property(fc.array(change, { minLength: 1, maxLength: 40 }), (changes) => {
        const cached = new ClfTimeParser();
        const v = fields.map(() => 0);
        for (const [field, value] of changes) {
          v[field] = value;
          const t = text(v);
          expect(cached.parse(t, 0), t).toBe(new ClfTimeParser().parse(t, 0));
        }
      }),
    );
  });

  it('agrees with Date for any time of any day (property)', () => {
    const p = new IsoTimeParser();
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 4_102_444_800_000 }), (ms) => {
        expect(p.parse(new Date(ms).toISOString())).toBe(ms);
      }),
    );
  });
});

describe('combined and common log lines', () => {
  const parse = clfParser();
  it('reads address, time, method and target of combined and common lines', () => {
    expect(
      read(
        parse,
        '203.0.113.9 - frank [10/Oct/2000:13:55:36 -0700] "GET /a/b?c=1 HTTP/1.1" 200 2326 "http://r/" "Mozilla/5.0 (X11)"',
      ),
    ).toMatchObject({
      got: true,
      clientIp: '203.0.113.9',
      method: 'GET',
      target: '/a/b?c=1',
      timeMs: Date.UTC(2000, 9, 10, 20, 55, 36),
    });
    expect(
      read(parse, '2001:db8::1 - - [10/Oct/2000:13:55:36 +0000] "POST /x HTTP/2.0" 201 -'),
    ).toMatchObject({
      got: true,
      clientIp: '2001:db8::1',
      method: 'POST',
      target: '/x',
    });
    expect(
      read(parse, '198.51.100.1 - - [10/Oct/2000:13:55:36 +0000] "GET http://h.example/p/q HTTP/1.1" 200 1'),
    ).toMatchObject({
      target: '/p/q',
    });
    expect(
      read(parse, '198.51.100.1 - - [10/Oct/2000:13:55:36 +0000] "GET /a\\"b HTTP/1.1" 200 1'),
    ).toMatchObject({ target: '/a\\"b' });
  });

  it('refuses truncated, malformed and foreign lines', () => {
    for (const line of [
      '',
      'garbage',
      '203.0.113.9 - - [10/Oct/2000:13:55:36 -0700] "GET /a HTTP/1.1',
      '203.0.113.9 - - [10/Oct/2000:13:55:36 -0700] "GET /a HTTP/1.1" 2',
      '203.0.113.9 - - [10/Oct/2000:13:55',
      '203.0.113.9 - - [10/Oct/2000:13:55:36 -0700] "-" 400 0 "-" "-"',
      '203.0.113.9 - - [10/Oct/2000:13:55:36 -0700] "\\x16\\x03\\x01" 400 0 "-" "-"',
      '203.0.113.9 - - [10/Oct/2000:13:55:36 -0700] "get /a HTTP/1.1" 200 1',
      '{"time":"2026-12-03T06:38:27Z"}',
    ])
      expect(read(parse, line).got, line).toBe(false);
  });

  it('never throws and is linear on any input (property)', () => {
    fc.assert(
      fc.property(fc.string({ maxLength: 300 }), (s) => {
        const got = parse(s, new LogRecord());
        expect(typeof got).toBe('boolean');
      }),
    );
  });
});

describe("Envoy's default format", () => {
  const parse = envoyParser();
  it('reads the time, the request and the first X-Forwarded-For address', () => {
    const line =
      '[2016-04-15T20:17:00.310Z] "POST /api/v1/locations HTTP/2" 204 - 154 0 226 100 "10.0.35.28, 10.0.0.1" "nsq2http" "cc21d9b0-cf5c-432b-8c7e-98aeb7988cd2" "locations" "tcp://10.0.2.1:80"';
    expect(read(parse, line)).toMatchObject({
      got: true,
      timeMs: Date.UTC(2016, 3, 15, 20, 17, 0, 310),
      method: 'POST',
      target: '/api/v1/locations',
      clientIp: '10.0.35.28',
    });
    expect(read(parse, line.replace('"10.0.35.28, 10.0.0.1"', '"-"')).clientIp).toBeUndefined();
    expect(read(parse, '[2016-04-15T20:17:00.310Z] "POST /api/v1/locations HTTP/2" 204 - 154').got).toBe(
      false,
    );
  });
});

describe('JSON access logs', () => {
  it('finds the facts under common names or mapped fields, nested too', () => {
    const parse = jsonParser(fieldMap([]));
    expect(
      read(
        parse,
        '{"time":"2026-12-03T06:38:27Z","method":"post","path":"/a","remote_addr":"192.0.2.1","tier":"free"}',
      ),
    ).toMatchObject({
      got: true,
      method: 'POST',
      target: '/a',
      clientIp: '192.0.2.1',
      tier: 'free',
      identified: true,
    });
    expect(read(parse, '{"ts":1764743907,"request":"GET /b?x HTTP/1.1","client":"192.0.2.2"}')).toMatchObject(
      {
        got: true,
        timeMs: 1_764_743_907_000,
        method: 'GET',
        target: '/b?x',
        identified: false,
      },
    );
    const mapped = jsonParser(
      fieldMap(['time=req.at', 'path=req.uri', 'client=peer', 'tenant=auth.t', 'app=auth.c', 'cost=weight']),
    );
    expect(
      read(
        mapped,
        '{"req":{"at":"2026-12-03T06:38:27Z","uri":"/c"},"peer":"192.0.2.3","auth":{"t":"acme","c":"web"},"weight":3}',
      ),
    ).toMatchObject({
      got: true,
      target: '/c',
      clientIp: '192.0.2.3',
      tenant: 'acme',
      client: 'web',
      cost: 3,
    });
    const costly = jsonParser(fieldMap(['cost=cost']));
    for (const cost of ['0', '1.5', '1e300', '"x"'])
      expect(read(costly, `{"time":1764743907,"path":"/a","cost":${cost}}`).got, cost).toBe(false);
    expect(read(costly, '{"time":1764743907,"path":"/a"}')).toMatchObject({ got: true, cost: 1 });
    for (const bad of ['{', '[1]', '{"time":"x","path":"/a"}', '{"time":"2026-12-03T06:38:27Z"}', 'plain'])
      expect(read(parse, bad).got, bad).toBe(false);
  });

  it('refuses a --field without NAME=PATH or with an unknown name, naming the option', () => {
    expect(() => fieldMap(['time'])).toThrow(/--field must be NAME=PATH .* got "time"/);
    expect(() => fieldMap(['when=ts'])).toThrow(/one of time, method, path/);
    expect(() => fieldMap(['time=a..b'])).toThrow(/--field/);
  });
});

describe("the gateway's own request log", () => {
  const parse = gatewayLogParser();
  const line = (o: object) =>
    JSON.stringify({
      level: 30,
      time: '2026-12-03T06:38:27.000Z',
      service: 'sluice',
      reqId: 'r',
      method: 'GET',
      url: '/a',
      status: 200,
      ms: 1,
      outcome: 'proxied',
      msg: 'request',
      ...o,
    });
  it('turns each kind of key back into the caller', () => {
    expect(read(parse, line({ key: 'ip:192.0.2.7', tier: 'standard' }))).toMatchObject({
      got: true,
      clientIp: '192.0.2.7',
      identified: false,
    });
    expect(read(parse, line({ key: 'ip:2001:db8:1:2::/64' })).clientIp).toBe('2001:db8:1:2::');
    expect(read(parse, line({ key: 'acme:ci%3Abot', tier: 'enterprise' }))).toMatchObject({
      tenant: 'acme',
      client: 'ci:bot',
      tier: 'enterprise',
    });
    expect(read(parse, line({ key: 'tenant:acme:user:alice' }))).toMatchObject({
      tenant: 'acme',
      user: 'alice',
    });
    expect(read(parse, line({ key: 'apikey:abc' }))).toMatchObject({ apiKeyHash: 'abc' });
    // An unlimited tier is exempt before any key: the tier alone is the caller.
    expect(read(parse, line({ outcome: 'exempt_tier', tier: 'internal' }))).toMatchObject({
      tier: 'internal',
      identified: true,
    });
  });

  it('skips its other lines and the requests it answered itself', () => {
    expect(
      read(parse, JSON.stringify({ level: 30, time: 't', service: 'sluice', msg: 'listening' })).got,
    ).toBe('skip');
    expect(read(parse, line({ outcome: 'own' })).got).toBe('skip');
    expect(read(parse, line({ url: 3 })).got).toBe(false);
    expect(read(parse, 'not json').got).toBe(false);
  });
});

describe('formats', () => {
  it('tells the formats apart from a first line', () => {
    expect(detectFormat('{"service":"sluice","msg":"request"}')).toBe('gateway');
    expect(detectFormat('{"time":1}')).toBe('json');
    expect(detectFormat('[2016-04-15T20:17:00.310Z] "GET / HTTP/1.1" 200')).toBe('envoy');
    expect(detectFormat('1.2.3.4 - - [10/Oct/2000:13:55:36 -0700] "GET / HTTP/1.1" 200 1')).toBe('combined');
    expect(() => logFormat('nginx')).toThrow(
      '--format must be one of auto, combined, common, envoy, json, gateway, got "nginx"',
    );
  });

  it('folds numeric and UUID segments of paths to *', () => {
    expect(pathTemplate('/api/items/42?x=1')).toBe('/api/items/:id');
    expect(pathTemplate('/api/items/42/')).toBe('/api/items/:id');
    expect(pathTemplate('/api/items/42/parts')).toBe('/api/items/*/parts');
    expect(pathTemplate('/api/documents/6f1c0001-1b2c-4d3e-8f90-0a1b2c3d4e5f/v/2')).toBe(
      '/api/documents/*/v/:id',
    );
    expect(pathTemplate('/api//items/')).toBe('/api/items');
    expect(pathTemplate('/')).toBe('/');
    expect(pathTemplate('/api/v2/items')).toBe('/api/v2/items');
  });
});
