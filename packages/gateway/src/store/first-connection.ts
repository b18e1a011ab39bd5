import type { Cluster, Redis } from 'ioredis';
import { ioredisClient, type RedisScriptClient } from 'sluice/redis';

/** The client statuses of a connection attempt in progress. */
const OPENING = new Set(['wait', 'connecting', 'connect']);

/**
 * The store's view of an ioredis client that lets a call made while the first connection is still being opened
 * wait for it, at most `waitMs` from the call, instead of failing at once. The gateway opens its clients without
 * an offline queue, so that during an outage a call fails at once and follows the failure mode; without this,
 * the first requests after start (the connection takes a round trip or two, and the start itself keeps the event
 * loop busy) would be answered by the failure mode too. Once the client was ready once, and whenever no
 * connection attempt is under way (Redis refused it), calls go straight to the client.
 *
 * @param client - the ioredis client or cluster, connecting.
 * @param waitMs - the longest a call waits for the first connection (the store's timeout: it would give up then).
 */
export function untilFirstConnection(client: Redis | Cluster, waitMs: number): RedisScriptClient {
  const inner = ioredisClient(client);
  let ready = client.status === 'ready';
  // One listener, however many calls wait: each races it against its own deadline.
  const opened = ready
    ? Promise.resolve()
    : new Promise<void>((resolve) => {
        client.once('ready', () => {
          ready = true;
          resolve();
        });
      });
  const firstConnection = () =>
    new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, waitMs);
      void opened.then(() => {
        clearTimeout(timer);
        resolve();
      });
    });
  const gated =
    <A extends unknown[]>(call: (...args: A) => Promise<unknown>) =>
    (...args: A): Promise<unknown> =>
      ready || !OPENING.has(client.status) ? call(...args) : firstConnection().then(() => call(...args));
  return {
    library: inner.library,
    cluster: inner.cluster,
    evalsha: gated(inner.evalsha),
    eval: gated(inner.eval),
    ping: gated(inner.ping),
    ...(inner.loadScript === undefined ? {} : { loadScript: gated(inner.loadScript) }),
    ...(inner.onConnect === undefined ? {} : { onConnect: inner.onConnect }),
  };
}
