/**
 * The limits of the gateway benchmark (`gateway.bench.ts`): one tier with a minute and an hour bucket plus one
 * endpoint rule, all far above what the machine can send, so every request takes the full path (identity, three
 * buckets all or nothing, headers) and is admitted.
 */
export const BENCH_LIMITS_YAML = `rateLimiting:
  defaultTier: bench
  tiers:
    bench: { requestsPerMinute: 600000000, requestsPerHour: 1000000000, burstLimit: 100000000 }
  endpoints:
    - { pattern: /api/*, limit: 600000000, window: 60s }
`;
