import { ErrorCode, SluiceError } from '../core/index.js';

/** The error of a call that Redis did not answer in time. */
export function timeoutError(ms: number): SluiceError {
  return new SluiceError(ErrorCode.StoreUnavailable, `Redis did not answer within ${ms} ms`, {
    timeoutMs: ms,
  });
}

/** True for the error {@link withTimeout} rejects with. */
export function isTimeout(error: unknown): boolean {
  return (
    error instanceof SluiceError &&
    error.code === ErrorCode.StoreUnavailable &&
    typeof error.details.timeoutMs === 'number'
  );
}

/**
 * Settles like `promise`, or rejects with {@link timeoutError} after `ms` milliseconds (`onTimeout` runs first).
 * The call itself is not cancelled: a command already sent may still run on the server.
 */
export function withTimeout<T>(promise: Promise<T>, ms: number, onTimeout: () => void): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const start = performance.now();
    // Node starts a timer from the event loop's cached time, which can be behind performance.now(): a timer
    // may fire a little early. Re-arm for the rest, so that calls queued behind this one (expired by
    // performance.now() in the batch queue) have really waited `ms` when it gives up.
    const fire = () => {
      const left = ms - (performance.now() - start);
      if (left > 0) {
        timer = setTimeout(fire, Math.ceil(left));
        return;
      }
      onTimeout();
      reject(timeoutError(ms));
    };
    let timer = setTimeout(fire, ms);
    promise.then(
      (v) => {
        clearTimeout(timer);
        resolve(v);
      },
      (e) => {
        clearTimeout(timer);
        reject(e);
      },
    );
  });
}
