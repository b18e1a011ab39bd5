import type { IncomingMessage, OutgoingHttpHeader, OutgoingHttpHeaders, ServerResponse } from 'node:http';
import type { ResponseHeadView, ResponseObserver } from './response-observer.js';

type WriteHead = ServerResponse['writeHead'];
type Write = ServerResponse['write'];
type End = ServerResponse['end'];
type Push = IncomingMessage['push'];

/**
 * Feeds a {@link ResponseObserver} from a Node.js response (node:http, and Express and Fastify, which write
 * through the same object): the head before the status line goes out, body chunks when the observer wants them,
 * and `end` exactly once when the response closes, whether it finished or was cut. Only the one response is
 * wrapped, and only when its verdict holds an observer, so a request without one pays nothing.
 *
 * @param res - the response the application writes.
 * @param observer - what the admitted request holds.
 * @param req - the request, whose body bytes are counted; default `res.req`.
 */
export function observeNodeResponse(
  res: ServerResponse,
  observer: ResponseObserver,
  req: IncomingMessage | undefined = res.req,
): void {
  new NodeResponseFeed(res, observer, req);
}

/** The wrapping of one response; also the head view the observer is given. */
class NodeResponseFeed implements ResponseHeadView {
  status = 0;
  #sent = 0;
  #received = 0;
  #headSeen = false;
  #ended = false;
  readonly #res: ServerResponse;
  readonly #req: IncomingMessage | undefined;
  readonly #observer: ResponseObserver;

  constructor(res: ServerResponse, observer: ResponseObserver, req: IncomingMessage | undefined) {
    this.#res = res;
    this.#req = req;
    this.#observer = observer;
    // Instance properties over the prototype's methods: Node's implicit head (first write or end) calls
    // `this.writeHead` too, so one wrapper sees every way the status line goes out.
    const writeHead = res.writeHead as WriteHead;
    const write = res.write as Write;
    const end = res.end as End;
    const feed = this;
    res.writeHead = function (this: ServerResponse, status: number, ...rest: unknown[]) {
      if (!feed.#headSeen && !this.headersSent) {
        const message = typeof rest[0] === 'string' ? rest[0] : undefined;
        const headers = (message === undefined ? rest[0] : rest[1]) as
          | OutgoingHttpHeaders
          | OutgoingHttpHeader[]
          | undefined;
        if (headers !== undefined) setAll(this, headers);
        feed.#head(status);
        return message === undefined
          ? writeHead.call(this, this.statusCode)
          : (writeHead as (s: number, m: string) => ServerResponse).call(this, this.statusCode, message);
      }
      return (writeHead as (...a: unknown[]) => ServerResponse).call(this, status, ...rest);
    } as WriteHead;
    res.write = function (this: ServerResponse, chunk: unknown, ...rest: unknown[]) {
      feed.#implicitHead(this);
      feed.#chunk(chunk, rest[0]);
      return (write as (...a: unknown[]) => boolean).call(this, chunk, ...rest);
    } as Write;
    res.end = function (this: ServerResponse, chunk?: unknown, ...rest: unknown[]) {
      feed.#implicitHead(this);
      if (typeof chunk !== 'function') feed.#chunk(chunk, rest[0]);
      return (end as (...a: unknown[]) => ServerResponse).call(this, chunk, ...rest);
    } as End;
    if (req !== undefined && !req.complete) {
      // The parser hands every body chunk to `push`, whether or not the application reads it.
      const push = req.push as Push;
      req.push = function (this: IncomingMessage, chunk: unknown, encoding?: BufferEncoding) {
        if (chunk !== null && chunk !== undefined) feed.#received += (chunk as Uint8Array).length;
        return push.call(this, chunk, encoding);
      } as Push;
    }
    // A response closes exactly once: after `finish`, or when the connection goes away first.
    res.once('close', () => this.#end());
  }

  get(name: string): string | undefined {
    const v = this.#res.getHeader(name);
    if (v === undefined) return undefined;
    return Array.isArray(v) ? v.join(', ') : String(v);
  }

  remove(name: string): void {
    if (!this.#res.headersSent) this.#res.removeHeader(name);
  }

  #head(status: number): void {
    this.#headSeen = true;
    this.status = status;
    this.#res.statusCode = status;
    this.#observer.head?.(this);
  }

  /**
   * Node sends an implicit head (`setHeader` then `write` or `end`, as Express's `res.json` and `res.send` do)
   * only inside the native `write` or `end`, after the body was handed over: the observer is given the head first
   * here, so it is collecting when the body arrives. The native call's own `writeHead` then passes straight through.
   */
  #implicitHead(res: ServerResponse): void {
    if (!this.#headSeen && !res.headersSent && !this.#ended) this.#head(res.statusCode);
  }

  #chunk(chunk: unknown, encoding: unknown): void {
    if (chunk === undefined || chunk === null || this.#ended) return;
    if (typeof chunk === 'string') {
      const enc = typeof encoding === 'string' ? (encoding as BufferEncoding) : 'utf8';
      this.#sent += Buffer.byteLength(chunk, enc);
      if (this.#observer.wantsBody === true) this.#observer.body?.(Buffer.from(chunk, enc));
      return;
    }
    const bytes = chunk as Uint8Array;
    this.#sent += bytes.length;
    if (this.#observer.wantsBody === true) this.#observer.body?.(bytes);
  }

  #end(): void {
    if (this.#ended) return;
    this.#ended = true;
    const res = this.#res;
    this.#observer.end({
      completed: res.writableFinished,
      status: res.headersSent ? res.statusCode : 0,
      bytesSent: this.#sent,
      bytesReceived: receivedBytes(this.#req, this.#received),
    });
  }
}

/**
 * The request body bytes read: the declared length of a body read whole (it may have been read before the
 * observer was attached), else what passed the parser since.
 */
function receivedBytes(req: IncomingMessage | undefined, counted: number): number {
  if (req === undefined) return counted;
  const declared = req.headers['content-length'];
  if (req.complete && declared !== undefined) {
    const n = Number(declared);
    if (Number.isSafeInteger(n) && n >= 0) return n;
  }
  return counted;
}

/** Sets the headers given to `writeHead` on the response, so the head view reads and removes them too. */
function setAll(res: ServerResponse, headers: OutgoingHttpHeaders | OutgoingHttpHeader[]): void {
  if (!Array.isArray(headers)) {
    for (const k in headers) {
      const v = headers[k];
      if (v !== undefined) res.setHeader(k, v);
    }
    return;
  }
  if (headers.length === 0) return;
  // A flat list `[name, value, ...]` or a list of pairs; a name given twice (set-cookie) adds a field line.
  const pairs = Array.isArray(headers[0]);
  const step = pairs ? 1 : 2;
  const seen = new Set<string>();
  for (let i = 0; i < headers.length; i += step) {
    const name = String(pairs ? (headers[i] as unknown as unknown[])[0] : headers[i]);
    const value = (pairs ? (headers[i] as unknown as unknown[])[1] : headers[i + 1]) as OutgoingHttpHeader;
    const lower = name.toLowerCase();
    if (seen.has(lower)) res.appendHeader(name, value as string | readonly string[]);
    else res.setHeader(name, value);
    seen.add(lower);
  }
}
