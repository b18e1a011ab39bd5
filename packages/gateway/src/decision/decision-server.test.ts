import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { asciiHeader } from './decision-server.js';

describe('asciiHeader', () => {
  it('keeps the JSON value and leaves only printable ASCII (property)', () => {
    fc.assert(
      fc.property(fc.jsonValue(), fc.string({ unit: 'binary' }), (value, text) => {
        const json = JSON.stringify({ value, text });
        const header = asciiHeader(json);
        expect(/^[\x20-\x7e]*$/.test(header)).toBe(true);
        expect(JSON.parse(header)).toEqual(JSON.parse(json));
      }),
    );
  });
});
