import {
  describeValue,
  ErrorCode,
  invalidOption,
  Limiter,
  objectOption,
  SluiceError,
} from '../core/index.js';
import type { HttpLimiter } from './http-limiter.js';

/**
 * Options of other rate-limit middleware (express-rate-limit, @fastify/rate-limit, hono-rate-limiter) that people
 * pass to Sluice by habit. Mounting with them must fail loudly: ignored, they leave a middleware that limits
 * nothing, or answers 500 to every request.
 */
const FOREIGN = new Set([
  'windowMs',
  'limit',
  'max',
  'timeWindow',
  'standardHeaders',
  'legacyHeaders',
  'keyGenerator',
  'message',
  'statusCode',
  'skip',
  'skipFailedRequests',
  'skipSuccessfulRequests',
  'requestPropertyName',
  'handler',
  'store',
  'validate',
  'allowList',
  'ban',
  'global',
]);

/** Options of createHttpLimiter, given to an adapter in place of the limiter built from them. */
const LIMITER_OPTIONS = new Set([
  'limiter',
  'rules',
  'trustedProxies',
  'proxyHeader',
  'exempt',
  'publicAuth',
]);

const HTTP_LIMITER = 'an HttpLimiter from createHttpLimiter (sluice/http)';

const foreignHint = (key: string): string =>
  `${key} belongs to another rate limiter (express-rate-limit, @fastify/rate-limit, hono-rate-limiter). Sluice ` +
  'takes an HttpLimiter from createHttpLimiter (sluice/http): quotas, windows and bursts are the policies of its ' +
  'Limiter, and its rules say which requests they apply to';
const METRICS_HINT =
  'metrics is an option of createHttpLimiter: createHttpLimiter({ limiter, rules, metrics }) records the ' +
  'decisions of every adapter mounted with the limiter it builds';
const limiterHint = (key: string): string =>
  `${key} is an option of createHttpLimiter: pass the limiter it builds from these options`;

/**
 * Whether a value is the engine's Limiter. `instanceof` alone would miss one from a second copy of the package (a
 * bundle beside node_modules), so its shape counts too: policies to resolve and decide. An HttpLimiter (which has
 * `evaluate`) is accepted before this is asked.
 */
function isEngineLimiter(value: unknown): value is Limiter {
  if (value instanceof Limiter) return true;
  const v = value as Partial<Record<'decide' | 'policy' | 'policies', unknown>> | null | undefined;
  return (
    typeof v === 'object' &&
    v !== null &&
    typeof v.decide === 'function' &&
    typeof v.policy === 'function' &&
    Array.isArray(v.policies)
  );
}

/** The fix for an engine Limiter given to an adapter: the call that builds the HTTP limiter, with its own policy. */
function engineLimiterHint(limiter: Limiter): string {
  const first: unknown = limiter.policies[0]?.name;
  const name = typeof first === 'string' ? first.replace(/['\\]/g, '\\$&') : 'api';
  return (
    'the adapters take the HttpLimiter built on it, whose rules say which requests its policies apply to and whose ' +
    `bucket each request takes from: createHttpLimiter({ limiter, rules: [{ path: '/api/*', policies: ['${name}'], ` +
    "key: 'ip' }] })"
  );
}

function hinted(option: string, expected: string, value: unknown, hint: string): SluiceError {
  const base = invalidOption(option, expected, value);
  return new SluiceError(ErrorCode.InvalidOption, `${base.message}. ${hint}`, { ...base.details, hint });
}

function unknownOption(where: string, key: string, known: readonly string[]): SluiceError {
  const option = `${where}.${key}`;
  const expected = `one of the known options (${known.join(', ')})`;
  if (FOREIGN.has(key)) return hinted(option, expected, key, foreignHint(key));
  if (LIMITER_OPTIONS.has(key)) return hinted(option, expected, key, limiterHint(key));
  // One sink on the limiter, not one per mount: a route mounted twice would otherwise be counted twice.
  if (key === 'metrics') return hinted(option, expected, key, METRICS_HINT);
  return invalidOption(option, expected, key);
}

/**
 * Checks the limiter an adapter is mounted with. The engine's Limiter in its place is named, with the
 * createHttpLimiter call that builds the HTTP limiter on it; an options object (express-rate-limit's
 * `{ windowMs, limit }`, or the options of createHttpLimiter) is named in the error with a hint.
 *
 * @param option - the option path for messages, for example `sluice/express rateLimit(limiter)`.
 * @param value - what the application passed.
 * @throws SluiceError `ERR_INVALID_OPTION`; for the engine's Limiter, with `details.given` `a Limiter` and the
 * createHttpLimiter call in `details.hint`; for an options object, naming its first key that belongs to another
 * rate limiter or to createHttpLimiter (`details.option` ends with that key).
 */
export function httpLimiterOption(option: string, value: unknown): HttpLimiter {
  if (typeof (value as { evaluate?: unknown } | null | undefined)?.evaluate === 'function') {
    return value as HttpLimiter;
  }
  // Checked before the foreign options: a Limiter's own `store` field would otherwise read as express-rate-limit's.
  if (isEngineLimiter(value)) {
    const given = 'a Limiter';
    const hint = engineLimiterHint(value);
    throw new SluiceError(
      ErrorCode.InvalidOption,
      `${option} must be ${HTTP_LIMITER}, got ${given} (the engine of 'sluice'): ${hint}`,
      { option, expected: HTTP_LIMITER, given, hint },
    );
  }
  if (typeof value === 'object' && value !== null && !Array.isArray(value)) {
    for (const key of Object.keys(value)) {
      const foreign = FOREIGN.has(key);
      if (!foreign && !LIMITER_OPTIONS.has(key)) continue;
      const given = describeValue((value as Record<string, unknown>)[key]);
      const hint = foreign ? foreignHint(key) : limiterHint(key);
      throw new SluiceError(
        ErrorCode.InvalidOption,
        `${option} must be ${HTTP_LIMITER}, got an options object with ${key} (${given}). ${hint}`,
        { option: `${option}.${key}`, expected: HTTP_LIMITER, given, hint },
      );
    }
  }
  throw invalidOption(option, HTTP_LIMITER, value);
}

/**
 * How one adapter option is checked: a function, a non-empty string or a function (`operation`), or `checked`
 * for an option the adapter checks itself (the Fastify plugin's `limiter` and `hook`).
 */
export type AdapterOptionKind = 'function' | 'string-or-function' | 'checked';

/**
 * Checks an adapter's options at mount time: an object, no unknown key (a foreign rate-limit option is named with
 * a hint), each value of its kind.
 *
 * @param where - the option path for messages, for example `sluice/express rateLimit options`.
 * @param value - the options given; `undefined` means none.
 * @param kinds - the known options and their kinds.
 * @param ignored - keys accepted and not checked (the framework's own plugin options).
 * @returns the options, frozen.
 * @throws SluiceError `ERR_INVALID_OPTION` naming the option, the expectation and the given value.
 */
export function adapterOptions<T extends object>(
  where: string,
  value: unknown,
  kinds: Readonly<Record<string, AdapterOptionKind>>,
  ignored: readonly string[] = [],
): Readonly<T> {
  if (value === undefined) return Object.freeze({}) as T;
  const o = objectOption(where, value);
  const known = Object.keys(kinds);
  for (const key of Object.keys(o)) {
    const v = o[key];
    const kind = kinds[key];
    if (kind === undefined) {
      if (ignored.includes(key)) continue;
      throw unknownOption(where, key, known);
    }
    if (kind === 'checked' || v === undefined || typeof v === 'function') continue;
    if (kind === 'string-or-function' && typeof v === 'string' && v !== '') continue;
    throw invalidOption(
      `${where}.${key}`,
      kind === 'function' ? 'a function' : 'a non-empty string or a function',
      v,
    );
  }
  return Object.freeze({ ...o }) as T;
}
