/** Counts to add to one bucket: tenant, then endpoint category, then requests (or cost units). */
export type BucketCounts = ReadonlyMap<string, ReadonlyMap<string, number>>;

/**
 * Where quota usage lives: per tenant x endpoint category x time bucket. A bucket is named by its start in Unix
 * seconds; a window is the list of its buckets, oldest first (see `windowBuckets`). The tracker batches counts in
 * process and calls `add` once per flush, so a store is never on the decision path.
 */
export interface QuotaStore {
  /** A short name for logs and metrics: `memory`, `redis`. */
  readonly kind: string;
  /**
   * Adds `counts` into `bucket` and returns the usage of every tenant in `counts` over `window`.
   *
   * @param bucket - the bucket the counts belong to; one of `window`.
   * @param counts - tenant, category, count.
   * @param window - the window's buckets, oldest first.
   * @param expireAt - Unix seconds after which the bucket is outside every window and may be dropped.
   */
  add(
    bucket: number,
    counts: BucketCounts,
    window: readonly number[],
    expireAt: number,
  ): Promise<Map<string, number>>;
  /** The usage of each tenant over `window`. */
  totals(tenants: readonly string[], window: readonly number[]): Promise<Map<string, number>>;
  /** A tenant's usage over `window` by endpoint category. */
  usage(tenant: string, window: readonly number[]): Promise<Map<string, number>>;
  /** The `n` tenants with the most usage over `window`, most first. */
  top(window: readonly number[], n: number): Promise<[string, number][]>;
  /**
   * Claims the right to raise the alert for `tenant` crossing `threshold`; true for exactly one caller until the
   * claim is released or `ttlSeconds` pass. This is what makes an alert fire once per crossing across a fleet.
   */
  claimAlert(tenant: string, threshold: number, ttlSeconds: number): Promise<boolean>;
  /** Releases a claim once the tenant has fallen back below the threshold, so the next crossing alerts again. */
  releaseAlert(tenant: string, threshold: number): Promise<void>;
  /** Releases resources; the store is not used afterwards. */
  close(): Promise<void>;
}
