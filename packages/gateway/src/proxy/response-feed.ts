import type { IncomingMessage, ServerResponse } from 'node:http';
import type { ResponseHeadView, ResponseObserver } from 'sluice/http';

/** The upstream's response headers as undici hands them over, before the gateway writes them to the client. */
type UpstreamHeaders = Record<string, string | string[] | undefined>;

/**
 * Feeds the {@link ResponseObserver} of a proxied request (a concurrency slot, a cost settled from the response):
 * the upstream's head before it is written to the client (a header the observer removes is not forwarded), the
 * body chunks as they are written, and `end` exactly once when the client response closes. The response counts as
 * completed only when the upstream's answer arrived whole and was written whole: an upstream error or timeout, a
 * request the gateway answered itself (no upstream connection in time, a body too large) and a client that went
 * away all end it not completed. Made only for a request whose admission holds an observer.
 */
export class ResponseFeed implements ResponseHeadView {
  status = 0;
  #headers: UpstreamHeaders | undefined;
  #sent = 0;
  #upstreamEnded = false;
  #ended = false;
  readonly #observer: ResponseObserver;
  readonly #req: IncomingMessage;
  readonly #res: ServerResponse;
  /** The request body's bytes, once they pass the body limit that counts them. */
  bodyBytes: () => number = () => 0;

  /**
   * @param observer - what admission gave the request.
   * @param req - the client request, whose declared body length counts when its body was never read.
   * @param res - the client response; its close ends the observer.
   */
  constructor(observer: ResponseObserver, req: IncomingMessage, res: ServerResponse) {
    this.#observer = observer;
    this.#req = req;
    this.#res = res;
    // A client that went away while admission waited for the store closed the response already: no close follows.
    if (res.destroyed || (res as { closed?: boolean }).closed === true) this.end();
    else res.once('close', () => this.end());
  }

  /** Whether the observer reads body chunks. */
  get wantsBody(): boolean {
    return this.#observer.wantsBody === true;
  }

  /** The upstream's head, before the gateway writes it: the observer may remove headers from `headers`. */
  head(status: number, headers: UpstreamHeaders): void {
    this.status = status;
    this.#headers = headers;
    this.#observer.head?.(this);
    this.#headers = undefined;
  }

  /** A body chunk written to the client. */
  chunk(chunk: Uint8Array): void {
    this.#sent += chunk.length;
    if (this.#observer.wantsBody === true) this.#observer.body?.(chunk);
  }

  /** The upstream's answer arrived whole. */
  upstreamEnded(): void {
    this.#upstreamEnded = true;
  }

  get(name: string): string | undefined {
    const v = this.#headers?.[name];
    return Array.isArray(v) ? v.join(', ') : v;
  }

  remove(name: string): void {
    if (this.#headers !== undefined) delete this.#headers[name];
  }

  /** Ends the observer once: on the response's close, or at once for a response closed before the feed. */
  end(): void {
    if (this.#ended) return;
    this.#ended = true;
    const res = this.#res;
    this.#observer.end({
      completed: this.#upstreamEnded && res.writableFinished,
      status: res.headersSent ? res.statusCode : 0,
      bytesSent: this.#sent,
      bytesReceived: this.#received(),
    });
  }

  #received(): number {
    const counted = this.bodyBytes();
    if (counted > 0) return counted;
    const declared = Number(this.#req.headers['content-length'] ?? 0);
    return this.#req.complete && Number.isSafeInteger(declared) && declared > 0 ? declared : counted;
  }
}
