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
