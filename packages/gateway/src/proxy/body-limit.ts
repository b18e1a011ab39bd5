import { Transform, type TransformCallback } from 'node:stream';

/** The error a {@link BodyLimit} raises when a body grows past its limit. */
export class BodyTooLargeError extends Error {
  readonly code = 'BODY_TOO_LARGE';
  constructor(readonly limit: number) {
    super(`request body larger than ${limit} bytes`);
  }
}

/**
 * Passes a request body through, counting bytes, and fails once more than `limit` have passed: the size limit
 * for bodies without `Content-Length` (chunked), enforced while streaming, so nothing is buffered to check it.
 */
export class BodyLimit extends Transform {
  #seen = 0;

  /** @param limit - the largest body allowed, in bytes. */
  constructor(readonly limit: number) {
    super();
  }

  /** Bytes passed so far. */
  get seen(): number {
    return this.#seen;
  }

  override _transform(chunk: Buffer, _encoding: BufferEncoding, callback: TransformCallback): void {
    this.#seen += chunk.length;
    if (this.#seen > this.limit) callback(new BodyTooLargeError(this.limit));
    else callback(null, chunk);
  }
}
