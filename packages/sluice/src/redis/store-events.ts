import { invalidOption } from '../core/index.js';
import type { FailureMode } from './failure-mode.js';

/** Payload of the `failover` event: the store stopped asking Redis and follows its failure mode. */
export interface FailoverEvent {
  readonly failureMode: FailureMode;
  /** The error that tipped the breaker (network error, timeout, script error). */
  readonly cause: unknown;
}

/** Payload of the `recover` event: a probe got an answer and decisions come from Redis again. */
export interface RecoverEvent {
  /** Milliseconds (store clock) spent in the failure mode. */
  readonly downtimeMs: number;
  /** Decisions the failure mode answered during this outage. */
  readonly fallbackDecisions: number;
}

/** Payload of the `error` event: one script call failed (its calls follow the failure mode). */
export interface StoreErrorEvent {
  /** The network error, timeout or script error. */
  readonly cause: unknown;
  /** True when the call gave up waiting (`timeoutMs`) rather than being refused. */
  readonly timeout: boolean;
}

/** Events of a {@link RedisStore}, for logs and metrics exporters. */
export interface RedisStoreEvents {
  failover: FailoverEvent;
  recover: RecoverEvent;
  error: StoreErrorEvent;
}

/** A listener of one event. */
export type StoreListener<K extends keyof RedisStoreEvents> = (e: RedisStoreEvents[K]) => void;

/**
 * The logger a store writes its failure mode switches to: pino's and bunyan's `warn(fields, message)` fit as
 * they are; for `console`, pass `{ warn: (fields, message) => console.warn(message, fields) }`.
 */
export interface StoreLogger {
  warn(fields: Record<string, unknown>, message: string): void;
}

/**
 * The listeners of a store's events. A listener that throws is ignored: observability never breaks a decision.
 */
export class StoreEvents {
  readonly #listeners: { [K in keyof RedisStoreEvents]: Set<StoreListener<K>> } = {
    failover: new Set(),
    recover: new Set(),
    error: new Set(),
  };

  /** True when anyone listens to `event`, so that a payload is built only when it will be read. */
  has(event: keyof RedisStoreEvents): boolean {
    return this.#listeners[event].size > 0;
  }

  /** @throws SluiceError `ERR_INVALID_OPTION` for an unknown event name. */
  on<K extends keyof RedisStoreEvents>(event: K, listener: StoreListener<K>): void {
    this.#set(event).add(listener);
  }

  off<K extends keyof RedisStoreEvents>(event: K, listener: StoreListener<K>): void {
    this.#set(event).delete(listener);
  }

  emit<K extends keyof RedisStoreEvents>(event: K, payload: RedisStoreEvents[K]): void {
    for (const listener of this.#listeners[event]) {
      try {
        (listener as StoreListener<K>)(payload);
      } catch {
        // A failing metrics hook must not turn into a failed rate-limit decision.
      }
    }
  }

  #set<K extends keyof RedisStoreEvents>(event: K): Set<StoreListener<K>> {
    const set = this.#listeners[event] as Set<StoreListener<K>> | undefined;
    if (set === undefined) throw invalidOption('event', "one of 'failover', 'recover', 'error'", event);
    return set;
  }
}

/** The part of a store {@link logStoreTransitions} needs (described by shape: any store with these events fits). */
export interface TransitionSource {
  /** The store kind, logged as `store`. */
  readonly kind: string;
  on(event: 'failover', listener: (e: FailoverEvent) => void): unknown;
  on(event: 'recover', listener: (e: RecoverEvent) => void): unknown;
  off(event: 'failover', listener: (e: FailoverEvent) => void): unknown;
  off(event: 'recover', listener: (e: RecoverEvent) => void): unknown;
}

/**
 * Writes one warn-level line when a store enters its failure mode and one when it leaves it: an outage is as
 * visible in the logs as in the metrics. `RedisStore` does this itself when given a `logger` option; the gateway
 * calls it with its own logger.
 *
 * @param store - a store with `failover` and `recover` events, for example a `RedisStore`.
 * @param logger - where the lines go (pino fits).
 * @returns a function that stops the logging.
 *
 * @example
 * ```ts
 * const stop = logStoreTransitions(store, pino());
 * // {"level":40,"store":"redis","failureMode":"local","cause":"connect ECONNREFUSED ...","msg":"rate limit store unavailable: ..."}
 * ```
 */
export function logStoreTransitions(store: TransitionSource, logger: StoreLogger): () => void {
  const onFailover = (e: FailoverEvent) =>
    logger.warn(
      { store: store.kind, failureMode: e.failureMode, cause: messageOf(e.cause) },
      `rate limit store unavailable: decisions follow the failure mode "${e.failureMode}"`,
    );
  const onRecover = (e: RecoverEvent) =>
    logger.warn(
      { store: store.kind, downtimeMs: e.downtimeMs, fallbackDecisions: e.fallbackDecisions },
      'rate limit store answers again: decisions come from the store',
    );
  store.on('failover', onFailover);
  store.on('recover', onRecover);
  return () => {
    store.off('failover', onFailover);
    store.off('recover', onRecover);
  };
}

/** An error's message for a log field, never the error object (whose stack and fields can be large). */
function messageOf(cause: unknown): string {
  if (cause instanceof Error) return cause.message;
  return String(cause);
}
