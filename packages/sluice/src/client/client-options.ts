import { type Clock, monotonicClock } from '../core/clock.js';
import { ErrorCode, SluiceError } from '../core/errors.js';
import {
  booleanOption,
  integerOption,
  invalidOption,
  objectOption,
  rejectUnknownKeys,
} from '../core/options.js';

/** The `fetch` signature the client wraps and offers. */
export type FetchFunction = (input: RequestInfo | URL, init?: RequestInit) => Promise<Response>;

/** What `shouldRetry` and `onRetry` are told about a refused attempt. */
export interface RetryContext {
  /** 0 for the first retry, 1 for the second, and so on. */
  readonly attempt: number;
  /** The request method, upper case. */
  readonly method: string;
  /** The absolute request URL. */
  readonly url: string;
  /** The response that was refused; `undefined` when `fetch` itself failed (see `error`). */
  readonly response: Response | undefined;
  /** What `fetch` threw (a network failure); `undefined` when there is a response. */
  readonly error: unknown;
  /** The server's Retry-After in seconds, when it sent a valid one. */
  readonly retryAfterSeconds: number | undefined;
  /** The delay the client would wait before the retry, in milliseconds. */
  readonly delayMs: number;
  /** The client's own decision under its rules (status, method, idempotency); the hook may overrule it. */
  readonly retry: boolean;
}

/**
 * Options of {@link createClient}. The four first are the contract's SDK configuration, with its defaults.
 */
export interface ClientOptions {
  /** Retry responses with a status in `retryStatuses`. Default true. */
  readonly retryOnRateLimit?: boolean;
  /** Retries after the first attempt, integer 0 to 100. Default 3. */
  readonly maxRetries?: number;
  /** Growth of the backoff ceiling per retry, number >= 1. Default 2. */
  readonly backoffMultiplier?: number;
  /**
   * The longest single wait in seconds, number > 0 and at most 2147483 (a timer's longest wait). Default 60. Caps computed backoff; a server Retry-After (or a
   * pre-emptive wait) above it ends with {@link RateLimitExceededError} instead of a silent long sleep.
   */
  readonly maxBackoffSeconds?: number;
  /** The backoff ceiling of the first retry in seconds, number > 0. Default 1. */
  readonly initialBackoffSeconds?: number;
  /** Statuses that are retried, integers 400 to 599. Default `[429, 503]`. */
  readonly retryStatuses?: readonly number[];
  /**
   * Retry statuses other than 429 for non-idempotent methods too (POST, PATCH). Default false: a 503 may come after
   * the server acted. A request with an `Idempotency-Key` header counts as idempotent.
   */
  readonly retryNonIdempotent?: boolean;
  /**
   * Overrules the client's decision for one refused attempt (or a network failure, which by default is not
   * retried): return true or false, or `undefined` to keep `context.retry`. May be async.
   */
  readonly shouldRetry?: (context: RetryContext) => boolean | undefined | Promise<boolean | undefined>;
  /** Called before each retry's wait, for logs and metrics. */
  readonly onRetry?: (context: RetryContext) => void;
  /**
   * Wait before sending when the known state says the origin admits nothing now (an exhausted policy, or a
   * Retry-After still running), instead of spending a request on a 429. Default false.
   */
  readonly preemptiveWait?: boolean;
  /** The `fetch` to wrap. Default `globalThis.fetch`. */
  readonly fetch?: FetchFunction;
  /** Resolves relative request URLs (needed in Node, where `fetch` has no base). Default: the page's location. */
  readonly baseUrl?: string | URL;
  /** Time for waits and for the state's countdowns. Default the monotonic clock; tests pass `ManualClock`. */
  readonly clock?: Clock;
  /** Uniform random numbers in [0, 1) for full jitter. Default `Math.random`. */
  readonly random?: () => number;
  /** Wall-clock epoch milliseconds, for HTTP-dates when a response lacks `Date`. Default `Date.now`. */
  readonly wallClock?: () => number;
}

/** The validated, frozen options of a client. */
export interface ResolvedClientOptions {
  readonly retryOnRateLimit: boolean;
  readonly maxRetries: number;
  readonly backoffMultiplier: number;
  readonly maxBackoffSeconds: number;
  readonly initialBackoffSeconds: number;
  readonly retryStatuses: readonly number[];
  readonly retryNonIdempotent: boolean;
  readonly shouldRetry: ClientOptions['shouldRetry'];
  readonly onRetry: ClientOptions['onRetry'];
  readonly preemptiveWait: boolean;
  readonly fetch: FetchFunction;
  readonly baseUrl: string | undefined;
  readonly clock: Clock;
  readonly random: () => number;
  readonly wallClock: () => number;
}

/** The contract's SDK defaults (CONTRACT-RATE-LIMIT-001, "Client SDK Configuration"). */
export const CLIENT_DEFAULTS = Object.freeze({
  retryOnRateLimit: true,
  maxRetries: 3,
  backoffMultiplier: 2,
  maxBackoffSeconds: 60,
  initialBackoffSeconds: 1,
  retryStatuses: Object.freeze([429, 503]),
});

const KNOWN = [
  'retryOnRateLimit',
  'maxRetries',
  'backoffMultiplier',
  'maxBackoffSeconds',
  'initialBackoffSeconds',
  'retryStatuses',
  'retryNonIdempotent',
  'shouldRetry',
  'onRetry',
  'preemptiveWait',
  'fetch',
  'baseUrl',
  'clock',
  'random',
  'wallClock',
];

/**
 * Validates {@link ClientOptions} and returns them frozen with defaults applied.
 *
 * @throws SluiceError `ERR_INVALID_OPTION` naming the option, the expectation and the given value.
 */
export function resolveClientOptions(options: ClientOptions = {}): ResolvedClientOptions {
  const o = objectOption('client options', options);
  rejectUnknownKeys('client options', o, KNOWN);
  const fetchImpl =
    o.fetch ?? (typeof globalThis.fetch === 'function' ? globalThis.fetch.bind(globalThis) : undefined);
  if (typeof fetchImpl !== 'function') {
    throw invalidOption('fetch', 'a fetch function (this runtime has no global fetch)', fetchImpl);
  }
  const clock = (o.clock ?? monotonicClock) as Clock;
  if (typeof clock !== 'object' || typeof clock.now !== 'function' || typeof clock.sleep !== 'function') {
    throw new SluiceError(ErrorCode.InvalidOption, 'clock must have now() and sleep() methods', {
      option: 'clock',
    });
  }
  return Object.freeze({
    retryOnRateLimit: booleanOption('retryOnRateLimit', o.retryOnRateLimit, CLIENT_DEFAULTS.retryOnRateLimit),
    maxRetries: integerOption('maxRetries', o.maxRetries, 0, 100, CLIENT_DEFAULTS.maxRetries),
    backoffMultiplier: numberOption(
      'backoffMultiplier',
      o.backoffMultiplier,
      1,
      false,
      CLIENT_DEFAULTS.backoffMultiplier,
    ),
    maxBackoffSeconds: maxBackoffOption(o.maxBackoffSeconds),
    initialBackoffSeconds: numberOption(
      'initialBackoffSeconds',
      o.initialBackoffSeconds,
      0,
      true,
      CLIENT_DEFAULTS.initialBackoffSeconds,
    ),
    retryStatuses: statusesOption(o.retryStatuses),
    retryNonIdempotent: booleanOption('retryNonIdempotent', o.retryNonIdempotent, false),
    shouldRetry: functionOption('shouldRetry', o.shouldRetry) as ClientOptions['shouldRetry'],
    onRetry: functionOption('onRetry', o.onRetry) as ClientOptions['onRetry'],
    preemptiveWait: booleanOption('preemptiveWait', o.preemptiveWait, false),
    fetch: fetchImpl as FetchFunction,
    baseUrl: baseUrlOption(o.baseUrl),
    clock,
    random: (functionOption('random', o.random) as (() => number) | undefined) ?? Math.random,
    wallClock: (functionOption('wallClock', o.wallClock) as (() => number) | undefined) ?? Date.now,
  });
}

function numberOption(
  option: string,
  value: unknown,
  min: number,
  exclusive: boolean,
  fallback: number,
): number {
  if (value === undefined) return fallback;
  if (typeof value !== 'number' || !Number.isFinite(value) || (exclusive ? value <= min : value < min)) {
    throw invalidOption(option, `a finite number ${exclusive ? '>' : '>='} ${min}`, value);
  }
  return value;
}

/**
 * The longest wait in whole seconds a timer holds: `setTimeout` in Node.js and browsers takes at most 2^31 - 1 ms
 * and fires at once for more. Every wait the client sleeps is at most `maxBackoffSeconds`, so bounding the option
 * bounds them all.
 */
const MAX_BACKOFF_SECONDS_LIMIT = Math.floor((2 ** 31 - 1) / 1000);

function maxBackoffOption(value: unknown): number {
  if (value === undefined) return CLIENT_DEFAULTS.maxBackoffSeconds;
  if (typeof value !== 'number' || !Number.isFinite(value) || value <= 0) {
    throw invalidOption('maxBackoffSeconds', 'a finite number > 0', value);
  }
  if (value > MAX_BACKOFF_SECONDS_LIMIT) {
    throw invalidOption(
      'maxBackoffSeconds',
      `a finite number > 0 and <= ${MAX_BACKOFF_SECONDS_LIMIT} (the longest timer wait)`,
      value,
    );
  }
  return value;
}

function functionOption(option: string, value: unknown): unknown {
  if (value !== undefined && typeof value !== 'function') throw invalidOption(option, 'a function', value);
  return value;
}

function statusesOption(value: unknown): readonly number[] {
  if (value === undefined) return CLIENT_DEFAULTS.retryStatuses;
  if (!Array.isArray(value)) throw invalidOption('retryStatuses', 'an array of HTTP statuses', value);
  value.forEach((s, i) => {
    integerOption(`retryStatuses[${i}]`, s, 400, 599);
  });
  return Object.freeze([...new Set(value as number[])]);
}

function baseUrlOption(value: unknown): string | undefined {
  if (value === undefined) return undefined;
  if (typeof value === 'string' || value instanceof URL) {
    try {
      return new URL(value).href;
    } catch {
      // fall through to the error below, which names the option
    }
  }
  throw invalidOption('baseUrl', 'an absolute URL', value instanceof URL ? value.href : value);
}
