/** The part of a Node.js `ServerResponse` that tells whether the client is still there. */
export interface ClosableResponse {
  /** True once the answer was fully handed to the socket. */
  readonly writableEnded: boolean;
  /** True once the response (and so its connection) was destroyed. */
  readonly destroyed: boolean;
  once(event: 'close', listener: () => void): unknown;
}

const signals = new WeakMap<ClosableResponse, AbortSignal>();

/**
 * An `AbortSignal` that aborts when the client disconnects before the answer is written: a response that closes
 * without having ended lost its connection. Adapters expose it as a getter on the request view, so it is only
 * made (one controller and one listener, once per response) for a request that waits in a queue.
 *
 * @param res - the response of the request (Node's `ServerResponse`, Express's and Fastify's `reply.raw`).
 */
export function disconnectSignal(res: ClosableResponse): AbortSignal {
  let signal = signals.get(res);
  if (signal !== undefined) return signal;
  const ac = new AbortController();
  signal = ac.signal;
  signals.set(res, signal);
  if (res.destroyed) ac.abort(new Error('the client closed the connection'));
  else {
    res.once('close', () => {
      if (!res.writableEnded) ac.abort(new Error('the client closed the connection'));
    });
  }
  return signal;
}
