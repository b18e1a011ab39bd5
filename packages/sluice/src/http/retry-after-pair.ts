import { HeaderName } from './rate-limit-headers.js';
import type { HeaderPair } from './types.js';

/**
 * The `Retry-After` lines of denials, one frozen pair per value up to an hour, made when first sent: a flood of
 * denials mostly repeats a few values (the window's refill time), and then allocates neither the pair nor the
 * string. Longer waits get a pair of their own.
 */
const RETRY_CACHED = 3600;
const retryPairs: (HeaderPair | undefined)[] = new Array(RETRY_CACHED + 1);

/** The frozen `Retry-After` line of a wait in whole seconds (at least 1). */
export function retryAfterPair(seconds: number): HeaderPair {
  const s = Math.max(1, seconds);
  if (s > RETRY_CACHED) return Object.freeze([HeaderName.RetryAfter, String(s)] as const);
  let pair = retryPairs[s];
  if (pair === undefined) {
    pair = Object.freeze([HeaderName.RetryAfter, String(s)] as const);
    retryPairs[s] = pair;
  }
  return pair;
}
