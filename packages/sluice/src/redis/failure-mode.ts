/**
 * What the store does while Redis does not answer (error, timeout, breaker open):
 * - `open`: admit (reason `store_unavailable_open`) and count;
 * - `closed`: deny (reason `store_unavailable`, for a 503 problem);
 * - `local`: decide in process memory with every quota, burst and queue limit divided by `nodeCount`, so a
 *   fleet of `nodeCount` nodes admits about the configured total.
 */
export type FailureMode = 'open' | 'closed' | 'local';
