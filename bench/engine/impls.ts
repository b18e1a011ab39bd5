/**
 * The contenders of the engine benchmark, each configured as close to 120 requests per minute with a burst of
 * 30 as its model allows. Semantic differences (stated in docs/benchmarks.md):
 * - sluice: exact token bucket, bounded table, full decision (r, t, Retry-After) per call, written into one
 *   reusable decision (`decideOne` with `into`).
 * - sluice-check: the same store through the public `limiter.check(name, key)`, a new decision per call.
 * - naive: a Map of { tokens, last } objects with float tokens and no bound; the practical ceiling of a map lookup.
 * - rate-limiter-flexible RateLimiterMemory: fixed window of 30 points per 15 s (no token bucket), async.
 * - express-rate-limit MemoryStore: fixed window of 15 s counting hits (limit 30 checked by the caller), async.
 * - limiter TokenBucket: a token bucket object per key (bucketSize 30, 120 per minute), unbounded Map of buckets.
 */

import { MemoryStore as ErlMemoryStore } from 'express-rate-limit';
import { TokenBucket } from 'limiter';
import { RateLimiterMemory } from 'rate-limiter-flexible';
import { definePolicy, Limiter, SingleDecision } from '../../packages/sluice/src/core/index.js';
import { MemoryStore } from '../../packages/sluice/src/memory/index.js';

/** A contender: `hit` answers whether one request for `key` is admitted. */
export interface Impl {
  readonly async: boolean;
  hit(key: string): boolean | Promise<boolean>;
}

export const IMPLS = [
  'sluice',
  'sluice-check',
  'naive',
  'rate-limiter-flexible',
  'express-rate-limit',
  'limiter',
] as const;
export type ImplName = (typeof IMPLS)[number];

/** Builds a contender sized for `keys` distinct keys. */
export function makeImpl(name: ImplName, keys: number): Impl {
  switch (name) {
    case 'sluice': {
      const policy = definePolicy({ name: 'rl.bench', quota: 120, window: 60, burst: 30 });
      const store = new MemoryStore({ maxTrackedKeys: Math.max(keys, 1), sweepIntervalMs: 0 });
      // The documented zero-allocation path: one reusable decision, read before the next call.
      const into = new SingleDecision();
      return { async: false, hit: (key) => store.decideOne(policy, key, 1, into).allowed };
    }
    case 'sluice-check': {
      // The public entry point as the README shows it: a policy name, a key, a fresh decision per call.
      const limiter = new Limiter({
        policies: [{ name: 'rl.bench', quota: 120, window: 60, burst: 30 }],
        store: new MemoryStore({ maxTrackedKeys: Math.max(keys, 1), sweepIntervalMs: 0 }),
      });
      return { async: false, hit: (key) => (limiter.check('rl.bench', key) as { allowed: boolean }).allowed };
    }
    case 'naive': {
      const rate = 120 / 60_000;
      const m = new Map<string, { tokens: number; last: number }>();
      return {
        async: false,
        hit(key) {
          const now = performance.now();
          let b = m.get(key);
          if (b === undefined) {
            b = { tokens: 30, last: now };
            m.set(key, b);
          } else {
            b.tokens = Math.min(30, b.tokens + (now - b.last) * rate);
            b.last = now;
          }
          if (b.tokens >= 1) {
            b.tokens -= 1;
            return true;
          }
          return false;
        },
      };
    }
    case 'rate-limiter-flexible': {
      const rl = new RateLimiterMemory({ points: 30, duration: 15 });
      return {
        async: true,
        hit: (key) =>
          rl.consume(key).then(
            () => true,
            () => false,
          ),
      };
    }
    case 'express-rate-limit': {
      const store = new ErlMemoryStore();
      store.init({ windowMs: 15_000 } as never);
      return { async: true, hit: async (key) => (await store.increment(key)).totalHits <= 30 };
    }
    case 'limiter': {
      const m = new Map<string, TokenBucket>();
      return {
        async: false,
        hit(key) {
          let b = m.get(key);
          if (b === undefined) {
            b = new TokenBucket({ bucketSize: 30, tokensPerInterval: 120, interval: 'minute' });
            m.set(key, b);
          }
          return b.tryRemoveTokens(1);
        },
      };
    }
  }
}
