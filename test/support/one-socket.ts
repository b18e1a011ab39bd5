/**
 * An HTTP/1.1 client over one raw TCP connection, for keep-alive tests: every request goes out on the same socket,
 * one after another, so a server that closes the connection after an answer is caught on the next request (which
 * then fails with "socket hang up", as a pooled client sees it) instead of being hidden by a reconnect.
 *
 * @example
 * ```ts
 * const s = await OneSocket.open('http://127.0.0.1:8080');
 * expect((await s.request('GET', '/x')).status).toBe(200);
 * expect((await s.request('POST', '/x', { body: 'small' })).status).toBe(429);
 * expect((await s.request('GET', '/x')).status).toBe(200); // same socket: s.localPort never changes
 * s.close();
 * ```
 */
import { connect, type Socket } from 'node:net';

/** One parsed answer. Header names are lower case; repeated fields are joined with `, `. */
export interface RawResponse {
  readonly status: number;
  readonly headers: Readonly<Record<string, string>>;
  readonly body: string;
  /** The statuses of the interim (1xx) answers read before this one, such as `[100]`. */
  readonly interim?: readonly number[];
}

/** Options of {@link OneSocket.request}. */
export interface RawRequestOptions {
  readonly headers?: Readonly<Record<string, string>>;
  /** Sent with its Content-Length (unless `headers` sets Transfer-Encoding or Content-Length itself). */
  readonly body?: string | Buffer;
  /** Send the body only after a `100 Continue` (a request with `Expect: 100-continue`); none if the final answer comes first. */
  readonly awaitContinue?: boolean;
}

const CRLF2 = Buffer.from('\r\n\r\n');

/** Thrown when the server ends the connection before a whole answer arrived. */
export class SocketHangUp extends Error {
  constructor(what: string) {
    super(`socket hang up: the server closed the connection ${what}`);
  }
}

export class OneSocket {
  readonly #socket: Socket;
  #buffer: Buffer = Buffer.alloc(0);
  #closed = false;
  #wake: (() => void) | undefined;
  /** The client's port of the one connection: the same for every request by construction. */
  readonly localPort: number;
  /** A promise resolved when the server (or `close`) ends the connection. */
  readonly ended: Promise<void>;

  private constructor(socket: Socket) {
    this.#socket = socket;
    this.localPort = socket.localPort ?? 0;
    socket.on('data', (chunk: Buffer) => {
      this.#buffer = this.#buffer.length === 0 ? chunk : Buffer.concat([this.#buffer, chunk]);
      this.#wake?.();
    });
    this.ended = new Promise((resolve) => {
      socket.once('close', () => {
        this.#closed = true;
        this.#wake?.();
        resolve();
      });
    });
    // A reset after the server's close is reported as 'close' above; the error itself carries nothing more.
    socket.on('error', () => {});
  }

  /** Connects to the host and port of `origin` (`http://127.0.0.1:8080`), or to a Unix socket `{ path }`. */
  static open(origin: string | { readonly path: string }): Promise<OneSocket> {
    const to =
      typeof origin === 'string'
        ? { host: new URL(origin).hostname, port: Number(new URL(origin).port) }
        : { path: origin.path };
    return new Promise((resolve, reject) => {
      const s = connect(to, () => {
        s.off('error', reject);
        resolve(new OneSocket(s));
      });
      s.once('error', reject);
    });
  }

  /** True once the connection is closed. */
  get closed(): boolean {
    return this.#closed;
  }

  /**
   * Sends one request on the connection and reads its whole answer (1xx answers are listed in `interim`).
   *
   * @throws SocketHangUp when the connection closes before the answer is complete.
   */
  async request(method: string, path: string, options: RawRequestOptions = {}): Promise<RawResponse> {
    if (this.#closed) throw new SocketHangUp('before the request was sent');
    const head = [`${method} ${path} HTTP/1.1`, 'host: 127.0.0.1'];
    const given = Object.keys(options.headers ?? {}).map((k) => k.toLowerCase());
    for (const [k, v] of Object.entries(options.headers ?? {})) head.push(`${k}: ${v}`);
    const body = options.body === undefined ? undefined : Buffer.from(options.body);
    if (body !== undefined && !given.includes('content-length') && !given.includes('transfer-encoding')) {
      head.push(`content-length: ${body.length}`);
    }
    this.#socket.write(`${head.join('\r\n')}\r\n\r\n`);
    const send = body !== undefined && body.length > 0;
    if (send && options.awaitContinue !== true) this.#socket.write(body);
    const interim: number[] = [];
    for (;;) {
      const r = await this.#readResponse();
      if (r.status >= 200) return { ...r, interim };
      interim.push(r.status);
      if (send && options.awaitContinue === true && r.status === 100) this.#socket.write(body);
    }
  }

  /** Reads the next answer without sending anything: the answer to a request pipelined with {@link write}. */
  async next(): Promise<RawResponse> {
    for (;;) {
      const r = await this.#readResponse();
      if (r.status >= 200) return r;
    }
  }

  /** Writes raw bytes (the rest of a body sent in parts). */
  write(data: string | Buffer): void {
    this.#socket.write(data);
  }

  /** Ends the connection from the client side. */
  close(): void {
    this.#socket.destroy();
  }

  async #more(what: string): Promise<void> {
    if (this.#closed) throw new SocketHangUp(what);
    await new Promise<void>((resolve) => {
      this.#wake = resolve;
    });
    this.#wake = undefined;
  }

  async #readResponse(): Promise<RawResponse> {
    let end = this.#buffer.indexOf(CRLF2);
    while (end < 0) {
      await this.#more('before the answer');
      end = this.#buffer.indexOf(CRLF2);
    }
    const lines = this.#buffer.subarray(0, end).toString('latin1').split('\r\n');
    this.#buffer = this.#buffer.subarray(end + 4);
    const status = Number(lines[0].split(' ')[1]);
    const headers: Record<string, string> = {};
    for (const line of lines.slice(1)) {
      const i = line.indexOf(':');
      const name = line.slice(0, i).trim().toLowerCase();
      const value = line.slice(i + 1).trim();
      headers[name] = headers[name] === undefined ? value : `${headers[name]}, ${value}`;
    }
    if (status < 200 || status === 204 || status === 304) return { status, headers, body: '' };
    if (/chunked/i.test(headers['transfer-encoding'] ?? '')) {
      return { status, headers, body: (await this.#readChunked()).toString('utf8') };
    }
    const length = Number(headers['content-length'] ?? 0);
    while (this.#buffer.length < length) await this.#more('in the middle of the answer body');
    const body = this.#buffer.subarray(0, length).toString('utf8');
    this.#buffer = this.#buffer.subarray(length);
    return { status, headers, body };
  }

  async #readChunked(): Promise<Buffer> {
    const parts: Buffer[] = [];
    for (;;) {
      let eol = this.#buffer.indexOf('\r\n');
      while (eol < 0) {
        await this.#more('in the middle of a chunked answer');
        eol = this.#buffer.indexOf('\r\n');
      }
      const size = Number.parseInt(this.#buffer.subarray(0, eol).toString('latin1'), 16);
      while (this.#buffer.length < eol + 2 + size + 2) await this.#more('in the middle of a chunk');
      parts.push(this.#buffer.subarray(eol + 2, eol + 2 + size));
      this.#buffer = this.#buffer.subarray(eol + 2 + size + 2);
      if (size === 0) return Buffer.concat(parts);
    }
  }
}
