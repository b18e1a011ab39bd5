import { describe, expect, it } from 'vitest';
import { fieldRecord, setField } from './extra-fields.js';

describe('extra fields as a flat list', () => {
  it('sets a new name at the end and replaces a name already there in place, as object keys do', () => {
    const list = ['x-request-id', 'a', 'RateLimit', 'r'];
    setField(list, 'vary', 'Origin');
    setField(list, 'RateLimit', 'r2');
    expect(list).toEqual(['x-request-id', 'a', 'RateLimit', 'r2', 'vary', 'Origin']);
    // Names are compared as object keys are: exactly, case included.
    setField(list, 'ratelimit', 'lower');
    expect(list).toEqual(['x-request-id', 'a', 'RateLimit', 'r2', 'vary', 'Origin', 'ratelimit', 'lower']);
  });

  it('gives the same object the former header object was, order and values alike', () => {
    const list = ['x-request-id', 'a', 'RateLimit', 'r', 'vary', 'Origin'];
    const record = fieldRecord(list);
    expect(record).toEqual({ 'x-request-id': 'a', RateLimit: 'r', vary: 'Origin' });
    expect(Object.keys(record)).toEqual(['x-request-id', 'RateLimit', 'vary']);
  });
});
