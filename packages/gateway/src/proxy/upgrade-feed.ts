import type { Duplex } from 'node:stream';
import type { ResponseHeadView, ResponseObserver } from 'sluice/http';

/** Response headers as undici hands them over. */
type UpstreamHeaders = Record<string, string | string[] | undefined>;

/** The byte counters of a `net.Socket`; another duplex has none, and counts 0. */
interface CountingSocket {
  readonly bytesRead?: number;
  readonly bytesWritten?: number;
}

/**
 * Feeds the {@link ResponseObserver} of an upgrade request (a WebSocket that holds a concurrency slot): the
 * upstream's head (its `101`, or the answer it gave instead), and `end` exactly once when the client's socket
 * closes, so a slot is held for as long as the connection lives. A switched connection that closes, and an
 * answer written whole, end completed; a refusal, an upstream failure and a client that left first do not.
 */
export class UpgradeFeed implements ResponseHeadView {
  status = 0;
  #headers: UpstreamHeaders | undefined;
  #completed = false;
  #ended = false;
  readonly #observer: ResponseObserver;
  readonly #socket: CountingSocket;
  readonly #read0: number;
  readonly #written0: number;

  /**
   * @param observer - what admission gave the request.
   * @param socket - the client's socket; its close ends the observer.
   */
  constructor(observer: ResponseObserver, socket: Duplex) {
    this.#observer = observer;
    this.#socket = socket as CountingSocket;
    this.#read0 = this.#socket.bytesRead ?? 0;
    this.#written0 = this.#socket.bytesWritten ?? 0;
    if (socket.destroyed) this.end();
    else socket.once('close', () => this.end());
  }

  /** The upstream's head, before it is written to the client. */
  head(status: number, headers: UpstreamHeaders): void {
    this.status = status;
    this.#headers = headers;
    this.#observer.head?.(this);
    this.#headers = undefined;
  }

  /** The upstream switched protocols, or its other answer was written whole. */
  completed(): void {
    this.#completed = true;
  }

  /** A status the gateway answered with itself (a refusal written on the socket). */
  answered(status: number): void {
    this.status = status;
  }

  get(name: string): string | undefined {
    const v = this.#headers?.[name];
    return Array.isArray(v) ? v.join(', ') : v;
  }

  remove(name: string): void {
    if (this.#headers !== undefined) delete this.#headers[name];
  }

  /** Ends the observer once: when the client's socket closes. */
  end(): void {
    if (this.#ended) return;
    this.#ended = true;
    this.#observer.end({
      completed: this.#completed,
      status: this.status,
      bytesSent: Math.max(0, (this.#socket.bytesWritten ?? 0) - this.#written0),
      bytesReceived: Math.max(0, (this.#socket.bytesRead ?? 0) - this.#read0),
    });
  }
}
