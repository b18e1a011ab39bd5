import type { Socket } from 'node:net';

/**
 * The requests of each client connection not answered yet, served one at a time. Node.js's HTTP/1.1 server hands
 * over a pipelined request as soon as it is parsed, before the answers of the requests ahead of it are done; served
 * at once, each would take its own upstream connection, so one client connection could hold the whole pool (its
 * answers go out in order anyway, RFC 9112 9.3.2). Here a pipelined request waits until the one ahead of it has
 * closed its response, so a connection holds at most one upstream connection, and a client's concurrency is bounded
 * by `server.maxConnectionsPerClient`.
 */
export class ConnectionLine {
  /** Per connection with a request being served, the requests waiting behind it, in order. */
  readonly #waiting = new WeakMap<Socket, (() => void)[]>();

  /**
   * Serves a request now when its connection serves none, else once the ones ahead of it are done.
   *
   * @param socket - the request's connection.
   * @param serve - starts serving the request; called at most once.
   */
  enter(socket: Socket, serve: () => void): void {
    const line = this.#waiting.get(socket);
    if (line !== undefined) {
      line.push(serve);
      return;
    }
    this.#waiting.set(socket, []);
    serve();
  }

  /**
   * The request being served on `socket` has closed its response: the next one starts.
   *
   * @returns true when no request of the connection is left (it is idle between requests).
   */
  leave(socket: Socket): boolean {
    const line = this.#waiting.get(socket);
    // A closed connection's waiting requests are dropped: nobody would read their answers, and nothing of them
    // should reach the upstream.
    const next = socket.destroyed ? undefined : line?.shift();
    if (next === undefined) {
      this.#waiting.delete(socket);
      return true;
    }
    next();
    return false;
  }
}
