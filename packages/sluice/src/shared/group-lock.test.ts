import { Worker } from 'node:worker_threads';
import { describe, expect, it } from 'vitest';
import { lock, tryLock, unlock } from './group-lock.js';

// A holder in another thread: takes the lock, tells the main thread, and releases it (waking the waiter) only
// once the main thread has marked the word contended, that is, once it is about to sleep in Atomics.wait.
const HOLDER = `
const { workerData, parentPort } = require('node:worker_threads');
const words = new Int32Array(workerData);
Atomics.store(words, 0, 1);
parentPort.postMessage('held');
while (Atomics.load(words, 0) !== 2) {}
Atomics.store(words, 1, 42); // written while holding: the waiter must see it once it has the lock
if (Atomics.sub(words, 0, 1) !== 1) { Atomics.store(words, 0, 0); Atomics.notify(words, 0, 1); }
`;

describe('group lock', () => {
  it('takes a free lock at once and refuses a held one to tryLock', () => {
    const words = new Int32Array(new SharedArrayBuffer(8));
    expect(tryLock(words, 0)).toBe(true);
    expect(tryLock(words, 0)).toBe(false);
    unlock(words, 0);
    lock(words, 0);
    expect(words[0]).toBe(1);
    unlock(words, 0);
    expect(words[0]).toBe(0);
  });

  it('sleeps while another thread holds the lock and wakes when it is released', async () => {
    const buffer = new SharedArrayBuffer(8);
    const words = new Int32Array(buffer);
    const worker = new Worker(HOLDER, { eval: true, workerData: buffer });
    await new Promise((resolve) => worker.once('message', resolve));
    lock(words, 0); // blocks until the holder lets go
    expect(words[1]).toBe(42);
    unlock(words, 0);
    expect(words[0]).toBe(0);
    await worker.terminate();
  });
});
