import { describe, expect, it } from 'vitest';
import { describeValue, invalidOption, objectOption } from './options.js';

describe('describeValue', () => {
  it('puts the right article before a type: an object, an array, a function, a symbol', () => {
    expect(describeValue({})).toBe('an object');
    expect(describeValue(new Map())).toBe('an object');
    expect(describeValue([1, 2])).toBe('an array of 2');
    expect(describeValue(() => 1)).toBe('a function');
    expect(describeValue(Symbol('s'))).toBe('a symbol');
  });

  it('shows primitives as written', () => {
    expect(describeValue('x')).toBe('"x"');
    expect(describeValue(3)).toBe('3');
    expect(describeValue(undefined)).toBe('undefined');
    expect(describeValue(null)).toBe('null');
    expect(describeValue(5n)).toBe('5n');
  });
});

describe('invalidOption', () => {
  it('names the option, the expectation and the given value in grammatical English', () => {
    const e = invalidOption('store', 'a RateLimitStore', {});
    expect(e.message).toBe('store must be a RateLimitStore, got an object');
    expect(e.details).toEqual({ option: 'store', expected: 'a RateLimitStore', given: 'an object' });
    expect(() => objectOption('options', 'x')).toThrow('options must be an object, got "x"');
  });
});
