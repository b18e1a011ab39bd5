import { integerOption, invalidOption, objectOption, rejectUnknownKeys } from '../core/index.js';

/** Options of {@link reconnectBackoff}. */
export interface ReconnectBackoffOptions {
  /** Milliseconds before the first reconnect attempt. Default 50. */
  readonly initialMs?: number;
  /** The cap: no two attempts are further apart. Default 500. */
  readonly maxMs?: number;
}

/**
 * A reconnect schedule for a Redis client (ioredis `retryStrategy`, node-redis `socket.reconnectStrategy`):
 * `initialMs` doubling up to `maxMs`, then `maxMs` for ever. A client never gives up on its own; and how soon it
 * is connected again after Redis returns bounds how soon decisions come from Redis again (the store's breaker
 * adds at most one probe interval). ioredis's default backs off to 2 s, this one to 500 ms.
 *
 * @returns `(attempt) => delayMs`, attempts counted from 1.
 * @throws SluiceError `ERR_INVALID_OPTION` for an invalid option.
 *
 * @example
 * ```ts
 * const redis = new Redis({ enableOfflineQueue: false, connectTimeout: 1000, retryStrategy: reconnectBackoff() });
 * ```
 */
export function reconnectBackoff(options: ReconnectBackoffOptions = {}): (attempt: number) => number {
  const o = objectOption('reconnectBackoff options', options);
  rejectUnknownKeys('reconnectBackoff options', o, ['initialMs', 'maxMs']);
  const initial = integerOption('initialMs', o.initialMs, 1, 60_000, 50);
  const max = integerOption('maxMs', o.maxMs, 1, 600_000, 500);
  if (max < initial) throw invalidOption('maxMs', `an integer >= initialMs (${initial})`, max);
  return (attempt: number) => {
    const n = Number.isInteger(attempt) && attempt > 1 ? attempt - 1 : 0;
    // 2^n overflows to Infinity long before n gets large; the cap takes over well before that.
    return n >= 30 ? max : Math.min(max, initial * 2 ** n);
  };
}
