import { invalidOption } from '../core/index.js';

const KEYS = new Set(['operation', 'cost']);

/**
 * Checks a route's `config.rateLimit` when the route is registered, so a bad value fails at startup with the route
 * and option named, rather than answering 500 to every request of the route with the engine's message.
 *
 * @param method - the route's method or methods, as given to Fastify.
 * @param url - the route's path.
 * @param setting - the route's `config.rateLimit`.
 * @throws SluiceError `ERR_INVALID_OPTION` for a value other than `false`, `undefined` or an object of
 * `operation` (a string) and `cost` (a safe integer >= 1), or for an unknown key.
 */
export function checkRouteSetting(method: string | readonly string[], url: string, setting: unknown): void {
  if (setting === undefined || setting === false) return;
  const where = `sluice/fastify route ${Array.isArray(method) ? method.join(',') : String(method)} ${url} config.rateLimit`;
  if (typeof setting !== 'object' || setting === null || Array.isArray(setting)) {
    throw invalidOption(where, 'false or an object of operation and cost', setting);
  }
  const s = setting as Record<string, unknown>;
  for (const key of Object.keys(s)) {
    if (!KEYS.has(key))
      throw invalidOption(`${where}.${key}`, 'absent: only operation and cost are read', s[key]);
  }
  if (s.operation !== undefined && typeof s.operation !== 'string') {
    throw invalidOption(`${where}.operation`, 'a string', s.operation);
  }
  const cost = s.cost;
  if (cost !== undefined && !(Number.isSafeInteger(cost) && (cost as number) >= 1)) {
    throw invalidOption(`${where}.cost`, 'a whole number of tokens (a safe integer >= 1)', cost);
  }
}

/** The route settings known to be valid, and how a setting joins them. */
export interface CheckedSettings {
  /** Whether a setting object was checked and found valid: a WeakSet lookup, no allocation. */
  has(setting: object): boolean;
  /**
   * Checks a route's setting (see {@link checkRouteSetting}) and, when it is an object, remembers it as valid.
   *
   * @throws SluiceError `ERR_INVALID_OPTION` as `checkRouteSetting` does.
   */
  add(method: string | readonly string[], url: string, setting: unknown): void;
}

/**
 * The settings objects of the routes checked so far. Routes registered after the plugin are checked by its
 * `onRoute` hook; routes registered before it, which Fastify does not show to a hook added later, on their first
 * request. Fastify copies a route's `config` into its context but keeps `config.rateLimit` by reference, so the
 * object met per request is the one checked, and a known route costs one WeakSet lookup. An invalid setting is
 * not remembered: each request of its route fails with the same error, before anything is decided.
 */
export function checkedSettings(): CheckedSettings {
  const valid = new WeakSet<object>();
  return {
    has: (setting) => valid.has(setting),
    add: (method, url, setting) => {
      checkRouteSetting(method, url, setting);
      if (typeof setting === 'object' && setting !== null) valid.add(setting);
    },
  };
}
