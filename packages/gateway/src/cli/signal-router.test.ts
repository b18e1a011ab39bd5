import { describe, expect, it } from 'vitest';
import { SignalRouter } from './signal-router.js';

/** A process's signal listeners, as `CliIo.onSignal` sees them, with every add and remove recorded. */
function fakeProcess() {
  const listeners = new Map<NodeJS.Signals, Set<() => void>>();
  const log: string[] = [];
  const onSignal = (signal: NodeJS.Signals, handler: () => void) => {
    const set = listeners.get(signal) ?? new Set();
    listeners.set(signal, set);
    set.add(handler);
    log.push(`on ${signal}`);
    return () => {
      set.delete(handler);
      log.push(`off ${signal}`);
    };
  };
  const send = (signal: NodeJS.Signals) => {
    for (const h of listeners.get(signal) ?? []) h();
  };
  return { onSignal, send, log, count: (s: NodeJS.Signals) => listeners.get(s)?.size ?? 0 };
}

describe('SignalRouter', () => {
  it('holds signals that arrive before a handler and delivers them in order once routed', () => {
    const p = fakeProcess();
    const router = new SignalRouter(p.onSignal, ['SIGTERM', 'SIGHUP']);
    p.send('SIGHUP');
    p.send('SIGTERM');
    const got: string[] = [];
    router.route((s) => got.push(s));
    expect(got).toEqual(['SIGHUP', 'SIGTERM']);
    p.send('SIGHUP');
    expect(got).toEqual(['SIGHUP', 'SIGTERM', 'SIGHUP']);
  });

  it('keeps one listener per signal from start to shutdown: never removed and added again in between', () => {
    const p = fakeProcess();
    const router = new SignalRouter(p.onSignal, ['SIGINT', 'SIGTERM']);
    router.route(() => undefined);
    expect(p.log).toEqual(['on SIGINT', 'on SIGTERM']);
    expect(p.count('SIGTERM')).toBe(1);
    router.off();
    router.off();
    expect(p.log).toEqual(['on SIGINT', 'on SIGTERM', 'off SIGINT', 'off SIGTERM']);
    expect(p.count('SIGTERM')).toBe(0);
  });
});
