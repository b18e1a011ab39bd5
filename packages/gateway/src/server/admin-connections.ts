import type { Socket } from 'node:net';
import { ipKey } from 'sluice/http';

/**
 * Connections the admin listener holds at once. An operator, a dashboard and a few scripts need far fewer; the cap
 * keeps the listener from taking the descriptors that the proxy listener leaves free (`server.maxConnections`),
 * so that it still answers while the proxy is at its cap.
 */
export const ADMIN_MAX_CONNECTIONS = 64;

/**
 * Connections one peer address (an IPv6 peer by its /64) holds on the admin listener at once: a browser opens 6
 * per host, a dashboard and a few scripts stay well below, and four addresses are needed to fill the listener.
 */
export const ADMIN_MAX_CONNECTIONS_PER_PEER = 16;

/** Caps of an {@link AdminConnections}; tests make them small. */
export interface AdminConnectionCaps {
  /** Connections held at once; default {@link ADMIN_MAX_CONNECTIONS}. */
  readonly total?: number;
  /** Connections of one peer address held at once; default {@link ADMIN_MAX_CONNECTIONS_PER_PEER}. */
  readonly perPeer?: number;
}

/**
 * The admin listener's connections, admitted as they are accepted. The token is only read once a request head is
 * whole, so a cap applied before it (Node.js's `maxConnections`) lets idle sockets without a token hold every
 * slot and lock the operator out. Here a connection is "vouched for" once it has carried a request with the valid
 * token; at a cap, a new connection takes the place of the oldest one not vouched for (of its own peer at the
 * per-peer cap, of the peer holding the most connections at the total), and is refused only when every
 * connection that could give way is vouched for. Vouched connections (a dashboard's event stream, an operator's
 * keep-alive) are never closed here.
 */
export class AdminConnections {
  readonly #total: number;
  readonly #perPeer: number;
  /** Connections not vouched for, oldest first (a `Set` iterates in insertion order). */
  readonly #unvouched = new Set<Socket>();
  /** Every open connection of each peer, oldest first. */
  readonly #byPeer = new Map<string, Set<Socket>>();
  readonly #peerOf = new WeakMap<Socket, string>();
  #open = 0;

  /** @param caps - the caps (defaults: 64 in all, 16 per peer). */
  constructor(caps: AdminConnectionCaps = {}) {
    this.#total = caps.total ?? ADMIN_MAX_CONNECTIONS;
    this.#perPeer = caps.perPeer ?? ADMIN_MAX_CONNECTIONS_PER_PEER;
  }

  /** Connections open now. */
  get open(): number {
    return this.#open;
  }

  /**
   * Admits a socket just accepted, closing the connection it replaces at a cap, or refuses it.
   *
   * @returns true when admitted; false when refused (the socket is destroyed).
   */
  admit(socket: Socket): boolean {
    const peer = socket.remoteAddress === undefined ? 'unknown' : ipKey(socket.remoteAddress);
    const mine = this.#byPeer.get(peer);
    if (mine !== undefined && mine.size >= this.#perPeer) {
      if (!this.#evict(mine)) return refuse(socket);
    } else if (this.#open >= this.#total && !this.#evictFromLargest()) return refuse(socket);
    this.#open++;
    const list = mine ?? new Set<Socket>();
    if (mine === undefined) this.#byPeer.set(peer, list);
    list.add(socket);
    this.#unvouched.add(socket);
    this.#peerOf.set(socket, peer);
    socket.once('close', () => this.#forget(socket));
    return true;
  }

  /** Marks a connection as having carried a request with the valid token: no later connection replaces it. */
  vouch(socket: Socket): void {
    this.#unvouched.delete(socket);
  }

  /** Closes the oldest connection of `among` not vouched for; false when there is none. */
  #evict(among: Set<Socket>): boolean {
    for (const s of among) {
      if (!this.#unvouched.has(s)) continue;
      // Forgotten now rather than at its `close` event: the slot is the new connection's at once.
      this.#forget(s);
      s.destroy();
      return true;
    }
    return false;
  }

  /**
   * At the total cap: closes the oldest connection not vouched for of the peer holding the most connections (of
   * those with one to give), the peer seen first on a tie. A few peers churning connections thus replace their
   * own, and an operator's connection whose head is still on the way is only reached once every peer holds as
   * few; the oldest of all would be reached after `total` new connections, from four peers at the per-peer cap.
   */
  #evictFromLargest(): boolean {
    let largest: Set<Socket> | undefined;
    for (const list of this.#byPeer.values()) {
      if (largest !== undefined && list.size <= largest.size) continue;
      for (const s of list) {
        if (!this.#unvouched.has(s)) continue;
        largest = list;
        break;
      }
    }
    return largest !== undefined && this.#evict(largest);
  }

  #forget(socket: Socket): void {
    const peer = this.#peerOf.get(socket);
    if (peer === undefined) return;
    this.#peerOf.delete(socket);
    this.#unvouched.delete(socket);
    this.#open--;
    const list = this.#byPeer.get(peer);
    list?.delete(socket);
    if (list?.size === 0) this.#byPeer.delete(peer);
  }
}

function refuse(socket: Socket): false {
  socket.destroy();
  return false;
}
