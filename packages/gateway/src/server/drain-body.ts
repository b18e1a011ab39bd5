import type { IncomingMessage } from 'node:http';

/**
 * How long a denial waits for the rest of a chunked body before it answers anyway and closes the connection: a
 * client that stops sending (or trickles) holds no denied request open, and no slot of the shutdown's wait.
 */
export const DENIAL_DRAIN_MS = 1000;

/**
 * The most bytes of a denied request's unread body the proxy reads and drops to keep the connection (or
 * `server.maxBodySize` when smaller): a chunked body is read before the answer within {@link DENIAL_DRAIN_MS}, a
 * declared one after it at the pace of `server.bodyTimeout` and `server.bodyMinRate` (see `paceLeftover`). An
 * upload of a few hundred kilobytes (a form with a file, a JSON document) then costs no new connection and no
 * request pipelined behind it; a larger one closes the connection, since reading it would cost more than a new one.
 */
export const DENIED_BODY_DRAIN_BYTES = 1024 * 1024;

/** What reading a request body found. */
export interface BodyRead {
  /** True when the body ended within the limit and the time, without an error. */
  readonly whole: boolean;
  /** Bytes read. */
  readonly size: number;
  /** The body, when it was asked to be kept and came whole. */
  readonly body: Buffer | undefined;
}

/**
 * Reads a request body up to `limit` bytes and `timeoutMs` (none when `undefined`), keeping it or dropping it.
 * Past either, reading stops without destroying the request, so that an answer can still go out on the
 * connection. The one reader of bodies that the gateway reads itself: the drain before a denial, the admin API's
 * override bodies.
 *
 * @param req - the request, whose body nobody else reads.
 * @param limit - the most bytes worth reading.
 * @param keep - whether to keep the bytes (`body`) or drop them.
 * @param timeoutMs - the most time worth waiting for the end.
 * @returns what was read; never rejects (a failed request reads as not whole).
 */
export function readBody(
  req: IncomingMessage,
  limit: number,
  keep: boolean,
  timeoutMs: number | undefined,
): Promise<BodyRead> {
  // A complete request may still hold unread data in its stream: only a drop can stop here.
  if (!keep && req.complete) return Promise.resolve({ whole: true, size: 0, body: undefined });
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    let size = 0;
    // One timer per body read, never per key; it holds the process open for no one.
    const timer = timeoutMs === undefined ? undefined : setTimeout(() => done(false), timeoutMs);
    timer?.unref();
    const done = (whole: boolean) => {
      clearTimeout(timer);
      req.off('data', onData);
      req.off('end', onEnd);
      req.off('error', onError);
      req.off('aborted', onError);
      req.off('close', onError);
      resolve({ whole, size, body: whole && keep ? Buffer.concat(chunks) : undefined });
    };
    const onData = (chunk: Buffer) => {
      size += chunk.length;
      if (size > limit) done(false);
      else if (keep) chunks.push(chunk);
    };
    const onEnd = () => done(true);
    // A request closed before its end (with or without an error) is not whole.
    const onError = () => done(false);
    req.on('data', onData);
    req.on('end', onEnd);
    req.on('error', onError);
    req.on('aborted', onError);
    req.on('close', onError);
  });
}

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
export async function drainBody(
  req: IncomingMessage,
  limit: number,
  timeoutMs: number = DENIAL_DRAIN_MS,
): Promise<boolean> {
  const { whole } = await readBody(req, limit, false, timeoutMs);
  // Past the limit the rest stays unread: the answer closes the connection.
  if (!whole) req.pause();
  return whole;
}
