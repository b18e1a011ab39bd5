import type { Socket } from 'node:net';

/** How many connections of a listener are idle between requests: a reclaim with none to close walks nothing. */
export interface IdleCount {
  n: number;
}

/**
 * The requests of one client connection not answered yet, served one at a time. Node.js's HTTP/1.1 server hands
 * over a pipelined request as soon as it is parsed, before the answers of the requests ahead of it are done; served
 * at once, each would take its own upstream connection, so one client connection could hold the whole pool (its
 * answers go out in order anyway, RFC 9112 9.3.2). Here a pipelined request waits until the one ahead of it has
 * closed its response, so a connection holds at most one upstream connection, and a client's concurrency is bounded
 * by `server.maxConnectionsPerClient`.
 *
 * One line per connection, made at its first request and kept until it closes: a request that finds the line
 * free (every request of a client that does not pipeline) costs two flag writes, no allocation and no map update.
 */
export class ConnectionLine {
  /** The connection. */
  readonly socket: Socket;
  /** Whether a request of the connection is being served. */
  busy = false;
  #idle = false;
  /** The requests waiting behind the one being served, in order; made at the first pipelined request. */
  #waiting: (() => void)[] | undefined;
  readonly #idleCount: IdleCount;

  /**
   * @param socket - the connection.
   * @param idleCount - the listener's count of idle lines, kept up to date by this one.
   */
  constructor(socket: Socket, idleCount: IdleCount) {
    this.socket = socket;
    this.#idleCount = idleCount;
  }

  /**
   * Whether the connection is open between two requests (keep-alive) with none being served or waiting: the first
   * to go when the listener is at its cap.
   */
  get idle(): boolean {
    return this.#idle;
  }

  set idle(value: boolean) {
    if (value === this.#idle) return;
    this.#idle = value;
    this.#idleCount.n += value ? 1 : -1;
  }

  /**
   * Takes the line for a request when it is free.
   *
   * @returns true when the request is served now; false when one is being served (then {@link wait} with it).
   */
  tryEnter(): boolean {
    this.idle = false;
    if (this.busy) return false;
    this.busy = true;
    return true;
  }

  /**
   * Queues a request behind the one being served.
   *
   * @param serve - starts serving the request; called at most once, when the ones ahead of it are done.
   */
  wait(serve: () => void): void {
    if (this.#waiting === undefined) this.#waiting = [serve];
    else this.#waiting.push(serve);
  }

  /**
   * The request being served has closed its response: the next one starts.
   *
   * @returns true when no request of the connection is left (it is idle between requests, unless closed).
   */
  leave(): boolean {
    // A closed connection's waiting requests are dropped: nobody would read their answers, and nothing of them
    // should reach the upstream.
    const next = this.socket.destroyed ? undefined : this.#waiting?.shift();
    if (next === undefined) {
      this.busy = false;
      this.#waiting = undefined;
      this.idle = !this.socket.destroyed;
      return true;
    }
    next();
    return false;
  }
}
