import { afterAll, beforeAll } from 'vitest';
import type { RedisServer } from '../../../test/support/redis-server.js';
import { client, startedIn, startUpstream, type TestUpstream, tempDir } from './support.js';

/** What a suite of gateways on one Redis shares between its tests. */
export interface RedisSuite {
  /** A temporary folder for configuration files, removed at the end of the suite. */
  readonly tmp: { readonly dir: string; readonly cleanup: () => void };
  /** A client for the suite's requests, closed at the end. */
  readonly agent: ReturnType<typeof client>;
  /** The upstream the gateways forward to. */
  readonly upstream: TestUpstream;
  /** The suite's own redis-server. */
  readonly redis: RedisServer;
}

/**
 * Registers the hooks of a suite whose gateways share one Redis: starts an upstream and a redis-server of its own
 * before the first test; at the end runs `beforeClose` (closing the gateways it started), then stops them both.
 *
 * @param startRedis - `() => startRedisServer()`, written in the suite: test/support/suite-kinds.ts reads the
 *   starter's call in each test file to sort it (and to leave it out under `SLUICE_SKIP_REDIS=1`).
 * @param beforeClose - closes what the suite started on the Redis.
 */
export function redisSuite(
  startRedis: () => Promise<RedisServer>,
  beforeClose: () => Promise<unknown>,
): RedisSuite {
  const tmp = tempDir();
  const agent = client();
  let upstream: TestUpstream | undefined;
  let redis: RedisServer | undefined;
  beforeAll(async () => {
    [upstream, redis] = await Promise.all([startUpstream(), startRedis()]);
  }, 60_000);
  afterAll(async () => {
    await beforeClose();
    await Promise.all([upstream?.close(), redis?.stop(), agent.close()]);
    tmp.cleanup();
  });
  const ready = startedIn('the Redis suite');
  return {
    tmp,
    agent,
    get upstream() {
      return ready(upstream);
    },
    get redis() {
      return ready(redis);
    },
  };
}
