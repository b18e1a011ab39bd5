import type { ServerResponse } from 'node:http';
import type { Dispatcher } from 'undici';
import type { BodyLimit } from './body-limit.js';
import type { ConnectionGate } from './connection-gate.js';
import type { ExtraFields } from './extra-fields.js';
import { headForWriteHead } from './forward-headers.js';
import { classify, type ProxyFailure } from './proxy-failure.js';
import type { ResponseFeed } from './response-feed.js';

function uncork(res: ServerResponse): void {
  if (res.writableCorked > 0) res.uncork();
}

/**
 * The client response's close, relayed by a listener the caller has anyway (the request pipeline's one `close`
 * listener): the forwarding sets `onClose` while its request is upstream, instead of adding a listener per request.
 */
export interface CloseRelay {
  onClose: (() => void) | undefined;
}

/**
 * One forwarded request as an undici dispatch handler: writes the upstream's status and headers (plus the
 * gateway's) to the client, the body chunks as they arrive (pausing undici while the client socket is full), and
 * settles once with `undefined` (a response was sent or cut) or the failure to answer with.
 */
export class ForwardState implements Dispatcher.DispatchHandler {
  body: BodyLimit | undefined;
  /** Whether the request's body has not arrived whole yet and counts in the gate's share of bodies. */
  bodyHeld = false;
  #controller: Dispatcher.DispatchController | undefined;
  #started = false;
  #settled = false;
  #aborted: { reason: unknown } | undefined;
  readonly #res: ServerResponse;
  readonly #extra: Readonly<ExtraFields>;
  readonly #gate: ConnectionGate;
  readonly #done: (f: ProxyFailure | undefined) => void;
  /** What admission's observer is fed from; `undefined` for a request that holds nothing (the usual case). */
  readonly #feed: ResponseFeed | undefined;
  readonly #onClose = () => {
    if (!this.#settled && !this.#res.writableFinished) this.abort(new Error('client closed the connection'));
  };
  /** Made the first time the client socket is full (a large answer), not for every request. */
  #onDrain: (() => void) | undefined;

  constructor(
    res: ServerResponse,
    extra: Readonly<ExtraFields>,
    gate: ConnectionGate,
    done: (f: ProxyFailure | undefined) => void,
    feed?: ResponseFeed,
    relay?: CloseRelay,
  ) {
    this.#res = res;
    this.#extra = extra;
    this.#gate = gate;
    this.#done = done;
    this.#feed = feed;
    // Kept until the response closes (once per response) instead of removed when settled: removing a listener
    // per request cost more than the flag test that makes a late close a no-op.
    if (relay !== undefined) relay.onClose = this.#onClose;
    else res.on('close', this.#onClose);
  }

  /** The body has arrived whole: its place no longer counts in the share of bodies. */
  bodyArrived(): void {
    if (!this.bodyHeld) return;
    this.bodyHeld = false;
    this.#gate.bodyArrived();
  }

  /** Cancels the upstream request (client gone, body too large or too slow). */
  abort(reason: unknown): void {
    if (this.#aborted !== undefined) return;
    this.#aborted = { reason };
    this.#controller?.abort(reason instanceof Error ? reason : new Error(String(reason)));
  }

  onRequestStart(controller: Dispatcher.DispatchController): void {
    this.#controller = controller;
    if (this.#aborted !== undefined) controller.abort(this.#aborted.reason as Error);
  }

  onResponseStart(
    _c: Dispatcher.DispatchController,
    statusCode: number,
    headers: Record<string, string | string[] | undefined>,
  ): void {
    if (statusCode < 200) return; // 1xx: the final response follows
    // Before the head is written: the observer may take a header out (an upstream cost header not forwarded).
    this.#feed?.head(statusCode, headers);
    // A flat list: when nothing was set on the response before (the usual case), Node serializes it as given. The
    // list is shared by every response: Node reads it within the call and keeps none of it.
    this.#res.writeHead(statusCode, headForWriteHead(headers, this.#extra));
    // Headers, the chunks that arrive in the same tick and the end go out in one write instead of two or three
    // (a small response is usually all of it): a syscall per request saved.
    this.#res.cork();
    process.nextTick(uncork, this.#res);
    this.#started = true;
  }

  onResponseData(controller: Dispatcher.DispatchController, chunk: Buffer): void {
    this.#feed?.chunk(chunk);
    if (!this.#res.write(chunk)) {
      controller.pause();
      this.#onDrain ??= () => this.#controller?.resume();
      this.#res.once('drain', this.#onDrain);
    }
  }

  onResponseEnd(): void {
    this.#feed?.upstreamEnded();
    // Uncorked first: Node's chunked encoding writes the terminating chunk of `end()` ahead of chunks still
    // corked, and an answer whose last chunks arrived in the tick of its head lost them.
    uncork(this.#res);
    this.#res.end();
    this.#settle(undefined);
  }

  onResponseError(_c: Dispatcher.DispatchController, error: Error): void {
    if (this.#started) {
      // Headers are out: the only honest signal left is to cut the response.
      this.#res.destroy(error);
      this.#settle(undefined);
      return;
    }
    this.#settle(classify(error, { aborted: this.#aborted !== undefined, reason: this.#aborted?.reason }));
  }

  #settle(f: ProxyFailure | undefined): void {
    if (this.#settled) return;
    this.#settled = true;
    // undici is done with the request: its connection is free (or closed, and reopened for the next).
    this.#gate.leave(this.bodyHeld);
    this.bodyHeld = false;
    this.#done(f);
  }
}
