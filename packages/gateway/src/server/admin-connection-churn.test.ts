import { EventEmitter } from 'node:events';
import type { Socket } from 'node:net';
import { expect, it } from 'vitest';
import { AdminConnections } from './admin-connections.js';

/** What AdminConnections reads of a socket: its peer address, `close` and `destroy`. */
class FakeSocket extends EventEmitter {
  destroyed = false;
  constructor(readonly remoteAddress: string) {
    super();
  }
  destroy(): this {
    if (this.destroyed) return this;
    this.destroyed = true;
    this.emit('close');
    return this;
  }
}

const from = (address: string) => new FakeSocket(address) as unknown as Socket & FakeSocket;

it('at the total cap, a connection takes the slot of the peer holding the most, so a few peers cannot churn out an operator not vouched for yet', () => {
  const caps = new AdminConnections({ total: 8, perPeer: 4 });
  const attackers = ['127.0.0.2', '127.0.0.3'];
  for (const a of attackers) for (let i = 0; i < 4; i++) expect(caps.admit(from(a))).toBe(true);
  // The operator's connection, its head (and token) still on the way.
  const operator = from('127.0.0.1');
  expect(caps.admit(operator)).toBe(true);
  // The attackers open connection after connection, each one replacing an idle one.
  for (let i = 0; i < 40; i++) expect(caps.admit(from(attackers[i % 2] as string))).toBe(true);
  expect(operator.destroyed).toBe(false);
  expect(caps.open).toBe(8);
  caps.vouch(operator);
});

it('at the total cap with every peer holding one connection, the oldest not vouched for gives way', () => {
  const caps = new AdminConnections({ total: 3, perPeer: 2 });
  const [a, b, c] = [from('127.0.0.2'), from('127.0.0.3'), from('127.0.0.4')];
  for (const s of [a, b, c]) caps.admit(s);
  caps.vouch(a);
  expect(caps.admit(from('127.0.0.5'))).toBe(true);
  expect([a.destroyed, b.destroyed, c.destroyed]).toEqual([false, true, false]);
});
