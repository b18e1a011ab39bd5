import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { clfParser } from './clf-parser.js';
import { envoyParser } from './envoy-parser.js';
import { fieldMap } from './json-fields.js';
import { jsonParser } from './json-parser.js';
import { durationAt, durationOf, jsonDurationUnit } from './log-duration.js';
import { LogRecord } from './log-record.js';

function duration(parse: (s: string, r: LogRecord) => boolean | 'skip', line: string): number {
  const r = new LogRecord();
  expect(parse(line, r)).toBe(true);
  return r.durationMs;
}

const COMBINED =
  '203.0.113.9 - - [10/Oct/2000:13:55:36 -0700] "GET /a?b=1 HTTP/1.1" 200 2326 "http://r/" "curl/8"';
const COMMON = '203.0.113.9 - - [10/Oct/2000:13:55:36 -0700] "GET /a HTTP/1.1" 200 2326';
const ENVOY =
  '[2016-04-15T20:17:00.310Z] "POST /api/v1/locations HTTP/2" 204 - 154 0 226 100 "10.0.35.28" "nsq2http" "cc21d9b0" "locations" "tcp://10.0.2.1:80"';

describe('request durations in access logs', () => {
  it('NGINX $request_time after combined and common: seconds with a decimal point', () => {
    expect(duration(clfParser(), `${COMBINED} 0.123`)).toBeCloseTo(123, 6);
    expect(duration(clfParser(), `${COMBINED} 12.000 0.950`)).toBeCloseTo(12_000, 6);
    expect(duration(clfParser(), `${COMMON} 1.5`)).toBeCloseTo(1500, 6);
  });

  it('Apache %D after combined and common: whole microseconds', () => {
    expect(duration(clfParser(), `${COMBINED} 250000`)).toBeCloseTo(250, 6);
    expect(duration(clfParser(), `${COMMON} 1500`)).toBeCloseTo(1.5, 6);
  });

  it('Apache %T: whole seconds when the unit is named', () => {
    expect(duration(clfParser('s'), `${COMBINED} 3`)).toBe(3000);
    // A decimal point is seconds whatever the unit.
    expect(duration(clfParser('s'), `${COMBINED} 0.25`)).toBeCloseTo(250, 6);
  });

  it('a line without a duration, or with something else there, has none', () => {
    expect(duration(clfParser(), COMBINED)).toBe(-1);
    expect(duration(clfParser(), COMMON)).toBe(-1);
    expect(duration(clfParser(), `${COMBINED} -`)).toBe(-1);
    expect(duration(clfParser(), `${COMBINED} rt=0.1`)).toBe(-1);
    expect(duration(clfParser(), `${COMMON.replace('2326', '-')}`)).toBe(-1);
  });

  it('Envoy %DURATION%: milliseconds, the fifth field after the request line', () => {
    expect(duration(envoyParser(), ENVOY)).toBe(226);
    expect(duration(envoyParser(), ENVOY.replace(' 226 ', ' - '))).toBe(-1);
  });

  it('a JSON field: --field duration=PATH, and the common names', () => {
    const line = (o: Record<string, unknown>) =>
      JSON.stringify({ time: '2026-12-03T06:00:00Z', path: '/a', client: '203.0.113.7', ...o });
    expect(duration(jsonParser(fieldMap([])), line({ request_time: '0.250' }))).toBeCloseTo(250, 6);
    // NGINX writes $request_time with three decimals: as a JSON number 1.000 is 1, still seconds by its name.
    expect(duration(jsonParser(fieldMap([])), line({ request_time: 1.0 }))).toBe(1000);
    expect(duration(jsonParser(fieldMap([])), line({ duration: 226 }))).toBe(226);
    expect(
      duration(jsonParser(fieldMap(['duration=timing.total_us'])), line({ timing: { total_us: 5000 } })),
    ).toBe(5);
    expect(duration(jsonParser(fieldMap(['duration=took'])), line({ took: 40 }))).toBe(40);
    expect(duration(jsonParser(fieldMap([])), line({}))).toBe(-1);
    expect(duration(jsonParser(fieldMap([])), line({ duration: 'slow' }))).toBe(-1);
  });

  it('the unit of a JSON field by its name', () => {
    expect(jsonDurationUnit('request_time')).toBe('s');
    expect(jsonDurationUnit('upstream_s')).toBe('s');
    expect(jsonDurationUnit('duration')).toBe('ms');
    expect(jsonDurationUnit('duration_ms')).toBe('ms');
    expect(jsonDurationUnit('total_us')).toBe('us');
  });

  it('any written duration reads back in milliseconds, and no text reads as a negative one', () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 86_400_000 }), (ms) => {
        const s = (ms / 1000).toFixed(3);
        expect(durationAt(s, 0, s.length, 'us')).toBeCloseTo(ms, 3);
        expect(durationOf(String(ms), 'ms')).toBe(ms);
      }),
    );
    fc.assert(
      fc.property(fc.string({ maxLength: 24 }), (s) => {
        const d = durationAt(s, 0, s.length, 'ms');
        expect(d === -1 || (d >= 0 && d <= 86_400_000)).toBe(true);
      }),
    );
  });
});
