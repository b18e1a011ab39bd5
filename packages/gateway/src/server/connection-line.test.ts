import type { Socket } from 'node:net';
import { describe, expect, it } from 'vitest';
import { ConnectionLine, type IdleCount } from './connection-line.js';

function lineOf(count: IdleCount = { n: 0 }) {
  const socket = { destroyed: false } as Socket;
  return { socket, line: new ConnectionLine(socket, count), count };
}

describe('ConnectionLine', () => {
  it('serves one request at a time: a pipelined one starts when the one ahead closes, in order', () => {
    const { line } = lineOf();
    const started: string[] = [];
    expect(line.tryEnter()).toBe(true);
    expect(line.tryEnter()).toBe(false);
    line.wait(() => started.push('second'));
    expect(line.tryEnter()).toBe(false);
    line.wait(() => started.push('third'));
    expect(line.leave()).toBe(false);
    expect(started).toEqual(['second']);
    expect(line.leave()).toBe(false);
    expect(started).toEqual(['second', 'third']);
    expect(line.leave()).toBe(true);
    expect(line.tryEnter()).toBe(true);
  });

  it('is idle between requests, and the listener counts its idle lines', () => {
    const count: IdleCount = { n: 0 };
    const a = lineOf(count);
    const b = lineOf(count);
    a.line.tryEnter();
    b.line.tryEnter();
    expect(a.line.idle).toBe(false);
    a.line.leave();
    expect(a.line.idle).toBe(true);
    expect(count.n).toBe(1);
    b.line.leave();
    expect(count.n).toBe(2);
    a.line.tryEnter();
    expect(a.line.idle).toBe(false);
    expect(count.n).toBe(1);
    b.line.idle = false;
    b.line.idle = false;
    expect(count.n).toBe(0);
  });

  it('drops the waiting requests of a closed connection, which is not idle', () => {
    const { socket, line, count } = lineOf();
    const started: string[] = [];
    line.tryEnter();
    line.tryEnter();
    line.wait(() => started.push('pipelined'));
    (socket as { destroyed: boolean }).destroyed = true;
    expect(line.leave()).toBe(true);
    expect(started).toEqual([]);
    expect(line.idle).toBe(false);
    expect(count.n).toBe(0);
  });
});
