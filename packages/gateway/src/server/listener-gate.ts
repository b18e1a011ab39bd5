import type { Socket } from 'node:net';
import type { ConnectionCaps, ConnectionCounts, ConnectionRefusal } from './connection-counts.js';

/** What a {@link ListenerGate} reads of the gateway, for each connection. */
export interface ListenerGateOptions {
  /** The process's open connections (shared by the threads of `sluice serve --threads`). */
  readonly counts: ConnectionCounts;
  /** The caps in force: read per connection, so that a reload applies to the next one. */
  readonly caps: () => ConnectionCaps;
  /**
   * The key a peer address is counted under per client (an IPv6 address by its /64), or `undefined` for a peer
   * that is not one client: a trusted proxy (a load balancer holds the connections of many clients).
   */
  readonly clientKey: (peer: string | undefined) => string | undefined;
  /** Called for each connection refused, with the cap that refused it and the caps in force. */
  readonly onRefused: (reason: ConnectionRefusal, caps: ConnectionCaps) => void;
}

/**
 * Admits or refuses the proxy listener's connections as they are accepted, before a byte is read: a connection
 * takes a slot of the total and one of its client's until it closes.
 */
export class ListenerGate {
  readonly #options: ListenerGateOptions;

  /** @param options - the counts, caps and reporting. */
  constructor(options: ListenerGateOptions) {
    this.#options = options;
  }

  /** Connections open now, over every thread. */
  get open(): number {
    return this.#options.counts.open;
  }

  /**
   * Takes a slot for a socket just accepted; it is given back when the socket closes.
   *
   * @returns the cap that refused the socket (which then holds no slot), or `undefined` when it is admitted.
   */
  admit(socket: Socket): ConnectionRefusal | undefined {
    const o = this.#options;
    const caps = o.caps();
    const taken = o.counts.take(o.clientKey(socket.remoteAddress), caps);
    if (typeof taken === 'string') {
      o.onRefused(taken, caps);
      return taken;
    }
    socket.once('close', taken);
    return undefined;
  }
}
