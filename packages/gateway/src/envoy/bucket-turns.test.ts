import { describe, expect, it } from 'vitest';
import { BucketTurns } from './bucket-turns.js';

/** A task that runs until released, recording when it starts. */
function gate(log: string[], name: string) {
  let open: () => void = () => {};
  const opened = new Promise<void>((resolve) => {
    open = resolve;
  });
  return {
    open,
    task: async () => {
      log.push(name);
      await opened;
      return name;
    },
  };
}

describe('BucketTurns', () => {
  it('runs tasks over a shared bucket one at a time, in arrival order; others alongside', async () => {
    const turns = new BucketTurns();
    const log: string[] = [];
    const a = gate(log, 'a');
    const b = gate(log, 'b');
    const c = gate(log, 'c');
    const ra = turns.run(['x', 'y'], a.task);
    const rb = turns.run(['y', 'x', 'y'], b.task);
    const rc = turns.run(['z'], c.task);
    await Promise.resolve();
    expect(log).toEqual(['a', 'c']);
    expect(turns.busy(['y'])).toBe(true);
    a.open();
    await ra;
    await new Promise((r) => setImmediate(r));
    expect(log).toEqual(['a', 'c', 'b']);
    b.open();
    c.open();
    expect(await Promise.all([rb, rc])).toEqual(['b', 'c']);
    expect(turns.size).toBe(0);
    expect(turns.busy(['x', 'y', 'z'])).toBe(false);
  });

  it('ends the turn of a task that failed', async () => {
    const turns = new BucketTurns();
    await expect(turns.run(['x'], () => Promise.reject(new Error('store down')))).rejects.toThrow(
      'store down',
    );
    expect(await turns.run(['x'], async () => 1)).toBe(1);
    expect(turns.size).toBe(0);
  });
});
