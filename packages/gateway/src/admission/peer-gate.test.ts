import type { Socket } from 'node:net';
import { parseTrustedProxies } from 'sluice/http';
import { describe, expect, it } from 'vitest';
import type { Logger } from '../log/create-logger.js';
import { PeerGate } from './peer-gate.js';

/** A socket as the gate reads it: an address, a close it waits for, a destroy it calls. */
function socketFrom(remoteAddress: string): Socket & { destroyed: boolean } {
  const s = {
    remoteAddress,
    destroyed: false,
    on: () => s,
    once: () => s,
    destroy: () => {
      s.destroyed = true;
      return s;
    },
  };
  return s as unknown as Socket & { destroyed: boolean };
}

function gate() {
  let now = 0;
  const warnings: { fields: Record<string, unknown>; msg: string }[] = [];
  const tasks: { task: () => void; at: number }[] = [];
  const logger = {
    warn: (fields: Record<string, unknown>, msg: string) => warnings.push({ fields, msg }),
  } as unknown as Logger;
  const g = new PeerGate({
    section: 'decision',
    settings: () => ({
      peers: parseTrustedProxies('decision.allowedPeers', ['loopback']),
      maxConnections: 0,
    }),
    logger,
    now: () => now,
    later: (task, ms) => tasks.push({ task, at: now + ms }),
  });
  const advance = (ms: number) => {
    now += ms;
    for (const t of tasks.splice(0)) {
      if (t.at <= now) t.task();
      else tasks.push(t);
    }
  };
  return { g, warnings, tasks, advance };
}

describe('PeerGate warnings', () => {
  it('reports the refusals of a flood after its first line when the interval ends, even if the flood stopped', () => {
    const { g, warnings, tasks, advance } = gate();
    for (let i = 0; i < 2000; i++) expect(g.admit(socketFrom('10.0.0.9'))).toBe(false);
    expect(warnings.map((w) => w.fields.refused)).toEqual([1]);
    // One pending report for the whole flood, not one per refusal.
    expect(tasks).toHaveLength(1);
    advance(59_999);
    expect(warnings).toHaveLength(1);
    advance(1);
    expect(warnings.map((w) => w.fields.refused)).toEqual([1, 1999]);
    expect(warnings[1]).toMatchObject({ fields: { peer: '10.0.0.9' } });
    expect(warnings[1].msg).toContain('decision.allowedPeers');
  });

  it('writes nothing more when no refusal followed the first line, and warns again at once after the interval', () => {
    const { g, warnings, tasks, advance } = gate();
    g.admit(socketFrom('10.0.0.9'));
    expect(tasks).toHaveLength(0);
    advance(60_000);
    expect(warnings).toHaveLength(1);
    g.admit(socketFrom('10.0.0.8'));
    expect(warnings.map((w) => w.fields.refused)).toEqual([1, 1]);
  });

  it('admits a loopback peer and destroys another before reading', () => {
    const { g } = gate();
    const ok = socketFrom('::ffff:127.0.0.1');
    const refused = socketFrom('192.0.2.1');
    expect(g.admit(ok)).toBe(true);
    expect(ok.destroyed).toBe(false);
    expect(g.admit(refused)).toBe(false);
    expect(refused.destroyed).toBe(true);
    expect(g.open).toBe(1);
  });
});
