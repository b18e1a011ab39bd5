import type { Policy } from '../core/index.js';

/**
 * Requests in flight per concurrency policy in this process, over every key: what the in-flight gauge of
 * `/metrics` and the dashboard show. Kept beside the store's per-key counts (a process-wide total per policy is
 * not something a bucket store can sum cheaply), changed only by requests that hold slots, and keyed by the
 * policy object, so a policy replaced on reload starts from the requests it admits.
 */
const counts = new WeakMap<Policy, number>();

/** Adds `n` (negative to take away) to the requests in flight of `policy`. */
export function addInFlight(policy: Policy, n: number): void {
  counts.set(policy, (counts.get(policy) ?? 0) + n);
}

/**
 * Requests this process has admitted under a concurrency policy whose responses have not ended yet.
 *
 * @param policy - a concurrency policy (`concurrent` set); any other counts 0.
 */
export function inFlightRequests(policy: Policy): number {
  return counts.get(policy) ?? 0;
}
