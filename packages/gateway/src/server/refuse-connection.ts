import type { Socket } from 'node:net';

/**
 * The answer to a plain HTTP connection refused at a cap, written before its request is read: a client reads it
 * as the answer to the request it sends (or sent), and `Retry-After` tells it when to try again.
 */
const REFUSED_ANSWER = Buffer.from(
  'HTTP/1.1 503 Service Unavailable\r\n' +
    'content-type: text/plain; charset=utf-8\r\n' +
    'retry-after: 1\r\n' +
    'connection: close\r\n' +
    'content-length: 29\r\n' +
    '\r\n' +
    'too many connections, retry\r\n',
  'latin1',
);

/**
 * How long a refused connection may stay open for its answer to reach the client. Closing at once while the
 * client's request is unread would reset the connection, and a reset may drop the answer on the client's side.
 */
const LINGER_MS = 2_000;

/**
 * Refused connections answered at the same time, at most: past it the next ones are closed without an answer,
 * so that a flood of refused connections holds a bounded number of descriptors.
 */
const MAX_LINGERING = 256;

/** Ends the connections the listener refused: a short 503 where it can, else a plain close. */
export class ConnectionRefuser {
  #lingering = 0;

  /**
   * Refuses a socket just accepted.
   *
   * @param socket - the accepted socket.
   * @param answer - false where no HTTP answer can be written yet (TLS: the handshake has not happened).
   */
  refuse(socket: Socket, answer: boolean): void {
    if (!answer || this.#lingering >= MAX_LINGERING || !socket.writable) {
      socket.destroy();
      return;
    }
    this.#lingering++;
    socket.once('close', () => this.#lingering--);
    socket.setTimeout(LINGER_MS, () => socket.destroy());
    // The HTTP parser reads (and drops) what the client sends meanwhile; the listener ignores its requests.
    socket.end(REFUSED_ANSWER);
  }
}
