import { describe, expect, it } from 'vitest';
import { ErrorCode, SluiceError } from '../core/errors.js';
import { CLIENT_DEFAULTS, createClient, type RateLimitStatusSource, resolveClientOptions } from './index.js';

function invalid(options: unknown): SluiceError {
  try {
    resolveClientOptions(options as never);
  } catch (e) {
    expect(e).toBeInstanceOf(SluiceError);
    expect((e as SluiceError).code).toBe(ErrorCode.InvalidOption);
    return e as SluiceError;
  }
  throw new Error('expected ERR_INVALID_OPTION');
}

describe('client options', () => {
  it('defaults to retry on, 3 retries, multiplier 2, 60 s cap, 429 and 503', () => {
    const o = resolveClientOptions({ fetch: async () => new Response() });
    expect(o).toMatchObject({
      retryOnRateLimit: true,
      maxRetries: 3,
      backoffMultiplier: 2,
      maxBackoffSeconds: 60,
      initialBackoffSeconds: 1,
      retryStatuses: [429, 503],
      retryNonIdempotent: false,
      preemptiveWait: false,
    });
    expect(CLIENT_DEFAULTS).toMatchObject({
      retryOnRateLimit: true,
      maxRetries: 3,
      backoffMultiplier: 2,
      maxBackoffSeconds: 60,
    });
    expect(Object.isFrozen(o)).toBe(true);
  });

  it('names the option, the expectation and the given value', () => {
    expect(invalid({ maxRetries: -1 }).message).toBe('maxRetries must be an integer from 0 to 100, got -1');
    expect(invalid({ backoffMultiplier: 0.5 }).message).toBe(
      'backoffMultiplier must be a finite number >= 1, got 0.5',
    );
    expect(invalid({ maxBackoffSeconds: 0 }).message).toBe(
      'maxBackoffSeconds must be a finite number > 0, got 0',
    );
    expect(invalid({ maxBackoffSeconds: Number.POSITIVE_INFINITY }).message).toContain('finite');
    // A longer wait overflows setTimeout in Node.js and browsers (2^31 - 1 ms), which then fires at once.
    expect(invalid({ maxBackoffSeconds: 1e7 }).message).toBe(
      'maxBackoffSeconds must be a finite number > 0 and <= 2147483 (the longest timer wait), got 10000000',
    );
    expect(invalid({ maxBackoffSeconds: 2147483.5 }).message).toContain('<= 2147483');
    expect(() => resolveClientOptions({ maxBackoffSeconds: 2147483 })).not.toThrow();
    expect(invalid({ retryStatuses: [429, 200] }).message).toBe(
      'retryStatuses[1] must be an integer from 400 to 599, got 200',
    );
    expect(invalid({ retryStatuses: 429 }).message).toContain('an array');
    expect(invalid({ retryOnRateLimit: 'yes' }).message).toBe(
      'retryOnRateLimit must be a boolean, got "yes"',
    );
    expect(invalid({ shouldRetry: true }).message).toBe('shouldRetry must be a function, got true');
    expect(invalid({ fetch: 'fetch' }).message).toContain('fetch must be a fetch function');
    expect(invalid({ baseUrl: '/relative' }).message).toBe(
      'baseUrl must be an absolute URL, got "/relative"',
    );
    expect(invalid({ clock: { now: () => 0 } }).message).toContain('clock');
    expect(invalid({ maxRetry: 3 }).message).toContain('client options.maxRetry');
    expect(invalid(null).message).toContain('an object');
  });

  it('passes an unresolvable URL to fetch, which rejects it with its own error', async () => {
    const client = createClient();
    await expect(client.fetch('/no-base')).rejects.toThrow(TypeError);
  });

  it('subscribe needs a function: ERR_INVALID_OPTION naming the listener and what was given', () => {
    let error: unknown;
    try {
      createClient().subscribe(undefined as never);
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(SluiceError);
    expect(error).toMatchObject({
      code: ErrorCode.InvalidOption,
      message: 'listener must be a function, got undefined',
      details: { option: 'listener', expected: 'a function' },
    });
  });
});

describe('the client as the status element source', () => {
  it('fits RateLimitStatusSource without adapters', () => {
    const source: RateLimitStatusSource = createClient({ fetch: async () => new Response() });
    expect(source.entries()).toEqual([]);
    expect(typeof source.clock?.now()).toBe('number');
  });
});
