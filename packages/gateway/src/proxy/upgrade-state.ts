import { type IncomingHttpHeaders, type OutgoingHttpHeaders, STATUS_CODES } from 'node:http';
import type { Duplex } from 'node:stream';
import type { Dispatcher } from 'undici';
import type { ConnectionGate } from './connection-gate.js';
import { type ExtraFields, fieldRecord } from './extra-fields.js';
import { clientResponseHeaderList } from './forward-headers.js';
import { classify, type UpgradeResult } from './proxy-failure.js';
import type { UpgradeFeed } from './upgrade-feed.js';

/**
 * One upgrade request as an undici dispatch handler: a 101 joins the client's socket to the upstream's; any
 * other answer is written to the client's socket as an HTTP/1.1 response that ends with the connection (the
 * body is framed by its length when the upstream gave one, else by the close).
 */
export class UpgradeState implements Dispatcher.DispatchHandler {
  #controller: Dispatcher.DispatchController | undefined;
  #aborted: Error | undefined;
  #status = 0;
  #settled = false;
  readonly #client: Duplex;
  readonly #head: Buffer;
  readonly #extra: Readonly<ExtraFields>;
  readonly #gate: ConnectionGate;
  readonly #done: (r: UpgradeResult) => void;
  /** What admission's observer is fed from; `undefined` for a request that holds nothing. */
  readonly #feed: UpgradeFeed | undefined;
  readonly #onClose = () => this.#abort(new Error('client closed the connection'));
  readonly #onDrain = () => this.#controller?.resume();

  constructor(
    client: Duplex,
    head: Buffer,
    extra: Readonly<ExtraFields>,
    gate: ConnectionGate,
    done: (r: UpgradeResult) => void,
    feed?: UpgradeFeed,
  ) {
    this.#feed = feed;
    this.#client = client;
    this.#head = head;
    this.#extra = extra;
    this.#gate = gate;
    this.#done = done;
    client.once('close', this.#onClose);
  }

  onRequestStart(controller: Dispatcher.DispatchController): void {
    this.#controller = controller;
    if (this.#aborted !== undefined) controller.abort(this.#aborted);
  }

  onRequestUpgrade(
    _c: Dispatcher.DispatchController,
    _statusCode: number,
    headers: IncomingHttpHeaders,
    socket: Duplex,
  ): void {
    const client = this.#client;
    client.off('close', this.#onClose);
    if (this.#feed !== undefined) {
      this.#feed.head(101, headers as Record<string, string | string[] | undefined>);
      this.#feed.completed();
    }
    let head101 = 'HTTP/1.1 101 Switching Protocols\r\n';
    const all: OutgoingHttpHeaders = { ...(headers as OutgoingHttpHeaders), ...fieldRecord(this.#extra) };
    for (const [k, v] of Object.entries(all)) {
      if (v === undefined) continue;
      for (const one of Array.isArray(v) ? v : [v]) head101 += `${k}: ${String(one)}\r\n`;
    }
    client.write(`${head101}\r\n`);
    if (this.#head.length > 0) socket.write(this.#head);
    splice(client, socket);
    this.#settle({ kind: 'switched' });
  }

  onResponseStart(
    _c: Dispatcher.DispatchController,
    statusCode: number,
    headers: Record<string, string | string[] | undefined>,
  ): void {
    if (statusCode < 200) return; // 1xx: the final response follows
    this.#status = statusCode;
    this.#feed?.head(statusCode, headers);
    const list = clientResponseHeaderList(headers, this.#extra);
    let out = `HTTP/1.1 ${statusCode} ${STATUS_CODES[statusCode] ?? ''}\r\n`;
    for (let i = 0; i < list.length; i += 2) {
      const name = list[i] as string;
      // undici hands over the body without the upstream's chunked framing: only a length still holds.
      if (name === 'content-length' && headers['transfer-encoding'] !== undefined) continue;
      const value = list[i + 1];
      for (const one of Array.isArray(value) ? value : [value]) out += `${name}: ${one}\r\n`;
    }
    this.#client.write(`${out}connection: close\r\n\r\n`);
  }

  onResponseData(controller: Dispatcher.DispatchController, chunk: Buffer): void {
    if (!this.#client.write(chunk)) {
      controller.pause();
      this.#client.once('drain', this.#onDrain);
    }
  }

  onResponseEnd(): void {
    this.#client.off('close', this.#onClose);
    this.#feed?.completed();
    this.#client.end();
    this.#settle({ kind: 'answered', status: this.#status });
  }

  onResponseError(_c: Dispatcher.DispatchController, error: Error): void {
    this.#client.off('close', this.#onClose);
    if (this.#status !== 0) {
      // The answer's head is out: the only honest signal left is to cut the connection.
      this.#client.destroy();
      this.#settle({ kind: 'answered', status: this.#status });
      return;
    }
    const aborted = this.#aborted;
    this.#settle(classify(error, { aborted: aborted !== undefined, reason: aborted }));
  }

  #abort(reason: Error): void {
    if (this.#aborted !== undefined || this.#settled) return;
    this.#aborted = reason;
    this.#controller?.abort(reason);
  }

  #settle(r: UpgradeResult): void {
    if (this.#settled) return;
    this.#settled = true;
    // A switched socket has left the pool, an answered or failed upgrade is done with its connection.
    this.#gate.leave();
    this.#done(r);
  }
}

/**
 * Joins the client's and the upstream's sockets of a switched connection, and closes both once either side is done,
 * as NGINX does: an end from one side is passed on (after what is in flight), then both are destroyed when that
 * end has been written. Both listeners keep half-open sockets, so without this a side that never ends its half
 * (an upstream that ignores the client's FIN) would keep the other open, and the request's places (a concurrency
 * slot, a place under the overload limit) with it. WebSocket has its own closing handshake and no use for half-open
 * TCP.
 */
function splice(client: Duplex, socket: Duplex): void {
  const both = () => {
    client.destroy();
    socket.destroy();
  };
  socket.on('error', both);
  client.on('error', both);
  socket.once('close', both);
  client.once('close', both);
  // `pipe` ends the other side when one ends; once that end is written, the connection is over.
  const whenFlushed = (w: Duplex) => () => {
    if (w.writableFinished) both();
    else w.once('finish', both);
  };
  client.once('end', whenFlushed(socket));
  socket.once('end', whenFlushed(client));
  socket.pipe(client);
  client.pipe(socket);
}
