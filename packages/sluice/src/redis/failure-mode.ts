/**
 * What the store does while Redis does not answer (error, timeout, breaker open):
 * - `open`: admit (reason `store_unavailable_open`) and count;
 * - `closed`: deny (reason `store_unavailable`, for a 503 problem);
 * - `local`: decide in process memory with every quota, burst and queue limit divided by `nodeCount`: `n`
 *   nodes admit about `n / nodeCount` times the configured total, so `nodeCount` is the most nodes that can run.
 */
export type FailureMode = 'open' | 'closed' | 'local';
