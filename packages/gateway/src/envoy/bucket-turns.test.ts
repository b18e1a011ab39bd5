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

describe('BucketTurns, leaving and shedding', () => {
  const skipWith = (log: string[], name: string) => (why: string) => {
    log.push(`${name}:${why}`);
    return `${name}:${why}`;
  };

  it('skips a waiting task whose caller is gone when its turn comes, without running it', async () => {
    const turns = new BucketTurns();
    const log: string[] = [];
    const a = gate(log, 'a');
    let gone = false;
    const ra = turns.run(['x'], a.task);
    const rb = turns.run(
      ['x'],
      async () => {
        log.push('b ran');
        return 'b ran';
      },
      {
        gone: () => gone,
        skip: skipWith(log, 'b'),
      },
    );
    await Promise.resolve();
    gone = true;
    a.open();
    await ra;
    expect(await rb).toBe('b:gone');
    expect(log).toEqual(['a', 'b:gone']);
    expect(turns.size).toBe(0);
  });

  it('answers a task past the bound of waiting tasks on a bucket at once, by its skip', async () => {
    const turns = new BucketTurns(2);
    const log: string[] = [];
    const a = gate(log, 'a');
    const ra = turns.run(['x'], a.task);
    const rb = turns.run(['x', 'y'], async () => 'b', { skip: skipWith(log, 'b') });
    const rc = turns.run(['x'], async () => 'c', { skip: skipWith(log, 'c') });
    const rd = turns.run(['y', 'x'], async () => 'd', { skip: skipWith(log, 'd') });
    expect(await rd).toBe('d:full');
    expect(turns.busy(['z'])).toBe(false);
    a.open();
    expect(await Promise.all([ra, rb, rc])).toEqual(['a', 'b', 'c']);
    expect(turns.size).toBe(0);
  });

  it('answers the tasks queued behind a task that found the store failing by their skip, not by the store', async () => {
    const turns = new BucketTurns();
    const log: string[] = [];
    const failing = (s: { ok: boolean }) => !s.ok;
    const a = gate(log, 'a');
    const ra = turns.run(
      ['x'],
      async () => {
        await a.task();
        throw new Error('store timeout');
      },
      { failing, skip: skipWith(log, 'a') },
    );
    const rb = turns.run(
      ['x'],
      async () => {
        log.push('b ran');
        return 'b ran';
      },
      { failing, skip: skipWith(log, 'b') },
    );
    const rc = turns.run(
      ['x', 'y'],
      async () => {
        log.push('c ran');
        return 'c ran';
      },
      { failing, skip: skipWith(log, 'c') },
    );
    a.open();
    await expect(ra).rejects.toThrow('store timeout');
    expect(await Promise.all([rb, rc])).toEqual(['b:failing', 'c:failing']);
    expect(turns.size).toBe(0);
    // The queue drained: the next task asks the store again.
    expect(await turns.run(['x'], async () => 'probe', { failing, skip: skipWith(log, 'd') })).toBe('probe');
  });

  it('runs the tasks queued behind a healthy one, and a task without hooks runs whatever came before', async () => {
    const turns = new BucketTurns();
    const log: string[] = [];
    const failing = (s: { ok: boolean; value?: unknown }) => s.ok && s.value === 'down';
    const ra = turns.run(['x'], async () => 'up', { failing, skip: skipWith(log, 'a') });
    const rb = turns.run(['x'], async () => 'down', { failing, skip: skipWith(log, 'b') });
    const rc = turns.run(['x'], async () => 'plain');
    expect(await Promise.all([ra, rb, rc])).toEqual(['up', 'down', 'plain']);
  });
});
