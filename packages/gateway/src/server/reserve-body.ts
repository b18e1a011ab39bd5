import type { IncomingMessage } from 'node:http';

const JSON_TYPE = /\bjson\b/i;

/**
 * Reads a small JSON request body before admission, for a reservation that names one of its fields
 * (`cost.reserve.field`, such as `max_tokens`), and puts it back so the upstream receives it unchanged. Only a body
 * whose `content-length` is at most `maxBytes` is read; a larger one, a chunked one, one that waits for
 * `100 Continue` (the proxy sends that once the upstream holds a connection) or one that does not arrive within
 * `timeoutMs` reserves the default instead, so the read is bounded in bytes and in time.
 *
 * @param req - the request, nothing of its body read yet.
 * @param maxBytes - the largest body read.
 * @param timeoutMs - how long the body may take to arrive.
 * @returns the whole body, or `undefined` when it was not read whole.
 */
export async function readReserveBody(
  req: IncomingMessage,
  maxBytes: number,
  timeoutMs: number,
): Promise<Uint8Array | undefined> {
  const h = req.headers;
  const declared = Number(h['content-length']);
  if (
    h.expect !== undefined ||
    !JSON_TYPE.test(h['content-type'] ?? '') ||
    !Number.isSafeInteger(declared) ||
    declared <= 0 ||
    declared > maxBytes
  ) {
    return undefined;
  }
  const chunks: Buffer[] = [];
  let got = 0;
  let body: Buffer | undefined;
  await new Promise<void>((resolve) => {
    const read = () => {
      while (got < declared) {
        const c = req.read() as Buffer | null;
        if (c === null) break;
        chunks.push(c);
        got += c.length;
      }
      if (got >= declared) done();
    };
    const done = () => {
      clearTimeout(timer);
      req.off('readable', read);
      req.off('end', done);
      req.off('close', done);
      // Put back in the same tick as the read that took the last byte, not after the await: a body that was whole
      // before it was read (a pipelined request) has its end scheduled for the next tick, and a chunk put back after
      // that end is refused, so the proxy would wait for a body that never comes.
      if (chunks.length > 0 && !req.readableEnded) {
        body = Buffer.concat(chunks);
        req.unshift(body);
      }
      resolve();
    };
    // One timer per request that reserves from its body, cleared as soon as the body is in.
    const timer = setTimeout(done, timeoutMs);
    req.on('readable', read);
    req.once('end', done);
    req.once('close', done);
    read();
  });
  return got === declared ? body : undefined;
}
