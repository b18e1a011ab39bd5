import type { IncomingMessage } from 'node:http';

/**
 * How long a denial waits for the rest of a chunked body before it answers anyway and closes the connection: a
 * client that stops sending (or trickles) holds no denied request open, and no slot of the shutdown's wait.
 */
export const DENIAL_DRAIN_MS = 1000;

/**
 * Reads and drops the rest of a request body of unknown length (chunked) before a denial is answered, so the
 * connection can serve the requests pipelined behind it, as Node does by itself for a declared small body.
 *
 * @param req - the request, whose body nobody else reads.
 * @param limit - the most bytes worth reading; past it reading stops.
 * @param timeoutMs - the most time worth waiting for the end; default {@link DENIAL_DRAIN_MS}.
 * @returns true when the body ended within `limit` bytes and `timeoutMs`; false when it went past either or the
 * request failed (the answer must then close the connection, and say so).
 */
export function drainBody(
  req: IncomingMessage,
  limit: number,
  timeoutMs: number = DENIAL_DRAIN_MS,
): Promise<boolean> {
  if (req.complete) return Promise.resolve(true);
  return new Promise((resolve) => {
    let read = 0;
    // One timer per denied chunked upload, never per key; it holds the process open for no one.
    const timer = setTimeout(() => done(false), timeoutMs);
    timer.unref();
    const done = (whole: boolean) => {
      clearTimeout(timer);
      req.off('data', onData);
      req.off('end', onEnd);
      req.off('error', onError);
      req.off('aborted', onError);
      // Past the limit the rest stays unread: the answer closes the connection.
      if (!whole) req.pause();
      resolve(whole);
    };
    const onData = (chunk: Buffer) => {
      read += chunk.length;
      if (read > limit) done(false);
    };
    const onEnd = () => done(true);
    const onError = () => done(false);
    req.on('data', onData);
    req.on('end', onEnd);
    req.on('error', onError);
    req.on('aborted', onError);
  });
}

/** Whether the client waits for `100 Continue` before it sends the body (`Expect: 100-continue`). */
export function expectsContinue(req: IncomingMessage): boolean {
  const e = req.headers.expect;
  return e !== undefined && e.toLowerCase() === '100-continue';
}
