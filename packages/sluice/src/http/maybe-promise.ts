import type { MaybePromise } from '../core/index.js';

/**
 * Applies `f` now when the value is ready, later when it is a promise: the memory store answers synchronously,
 * and a synchronous path must not pay for a promise and a microtask per request.
 */
export function whenReady<T, R>(value: MaybePromise<T>, f: (v: T) => MaybePromise<R>): MaybePromise<R> {
  return isPromiseLike(value) ? (value as Promise<T>).then(f) : f(value as T);
}

/** True for a thenable. */
export function isPromiseLike<T>(value: MaybePromise<T> | unknown): value is Promise<T> {
  return (
    typeof value === 'object' && value !== null && typeof (value as { then?: unknown }).then === 'function'
  );
}
