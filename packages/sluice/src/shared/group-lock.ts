/*
 * A three-state futex mutex on one Int32 word (0 free, 1 held, 2 held with waiters), after Drepper's "Futexes
 * Are Tricky". Critical sections are a few hundred nanoseconds of arithmetic, so an uncontended lock costs one
 * compareExchange and one sub; a waiter sleeps in Atomics.wait instead of burning a core.
 */

const SPINS = 64;

/** Takes the lock at `index`, waiting as long as it takes. */
export function lock(words: Int32Array, index: number): void {
  let c = Atomics.compareExchange(words, index, 0, 1);
  if (c === 0) return;
  for (let i = 0; i < SPINS; i++) {
    if (Atomics.load(words, index) === 0) {
      c = Atomics.compareExchange(words, index, 0, 1);
      if (c === 0) return;
    }
  }
  if (c !== 2) c = Atomics.exchange(words, index, 2);
  while (c !== 0) {
    Atomics.wait(words, index, 2);
    c = Atomics.exchange(words, index, 2);
  }
}

/** Takes the lock at `index` only if it is free now; true when taken. Never waits, so it cannot deadlock. */
export function tryLock(words: Int32Array, index: number): boolean {
  return Atomics.compareExchange(words, index, 0, 1) === 0;
}

/** Releases the lock at `index`, waking one waiter if any. */
export function unlock(words: Int32Array, index: number): void {
  if (Atomics.sub(words, index, 1) !== 1) {
    Atomics.store(words, index, 0);
    Atomics.notify(words, index, 1);
  }
}
