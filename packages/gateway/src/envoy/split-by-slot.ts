import type { Check, RateLimitStore } from 'sluice';
import { clusterSlot, RedisStore } from 'sluice/redis';

/**
 * Whether the store decides these checks in several calls: a `RedisStore` on a Redis Cluster splits a call whose
 * keys fall in different slots into one script per slot, a take in each and a give back on a denial. Such a call
 * is not atomic, so the Envoy service runs it in its request's turn on its buckets, as it does its own calls per
 * cost. One slot computed per check, only for a call of two or more checks on a Cluster.
 *
 * @param store - the gateway's store.
 * @param checks - the checks of one store call.
 */
export function splitBySlot(store: RateLimitStore, checks: readonly Check[]): boolean {
  if (checks.length < 2 || !(store instanceof RedisStore) || !store.options.client.cluster) return false;
  const first = clusterSlot(store.keyOf(checks[0].policy, checks[0].key));
  for (let i = 1; i < checks.length; i++)
    if (clusterSlot(store.keyOf(checks[i].policy, checks[i].key)) !== first) return true;
  return false;
}
