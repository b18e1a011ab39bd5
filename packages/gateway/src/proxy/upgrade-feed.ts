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
 *
 * A place under the overload limit (`place`) is held for less: until the upstream's answer to the upgrade ended
 * (its `101`, or the whole of another answer), the gateway refused it, or the client's socket closed, whichever
 * comes first, and given back exactly once. Load shedding protects what the upstream is working on, and a
 * switched WebSocket's life (minutes or days, mostly idle) would hold the limit and teach the adaptive limit a
 * latency that is not the upstream's (D-G114).
 */
export class UpgradeFeed implements ResponseHeadView {
  status = 0;
  #headers: UpstreamHeaders | undefined;
  #completed = false;
  #ended = false;
  readonly #observer: ResponseObserver | undefined;
  #place: ResponseObserver | undefined;
  readonly #socket: CountingSocket;
  readonly #read0: number;
  readonly #written0: number;

  /**
   * @param observer - what admission gave the request, if anything.
   * @param socket - the client's socket; its close ends the observer.
   * @param place - the upgrade's place under the overload limit, if it holds one.
   */
  constructor(observer: ResponseObserver | undefined, socket: Duplex, place?: ResponseObserver) {
    this.#observer = observer;
    this.#place = place;
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
    this.#observer?.head?.(this);
    this.#headers = undefined;
  }

  /** The upstream switched protocols, or its other answer was written whole. */
  completed(): void {
    this.#completed = true;
    this.#leave(true);
  }

  /** A status the gateway answered with itself (a refusal written on the socket). */
  answered(status: number): void {
    this.status = status;
    this.#leave(false);
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
    this.#leave(false);
    this.#observer?.end({
      completed: this.#completed,
      status: this.status,
      bytesSent: Math.max(0, (this.#socket.bytesWritten ?? 0) - this.#written0),
      bytesReceived: Math.max(0, (this.#socket.bytesRead ?? 0) - this.#read0),
    });
  }

  /** Gives back the place under the overload limit, once; `answered` says the upstream's answer ended. */
  #leave(answered: boolean): void {
    const place = this.#place;
    if (place === undefined) return;
    this.#place = undefined;
    // The shedder reads `completed` (a latency sample for an adaptive limit) from what is given here.
    place.end({ completed: answered, status: this.status, bytesSent: 0, bytesReceived: 0 });
  }
}
