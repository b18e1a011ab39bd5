/**
 * The Envoy domain of the tests of requests decided in several store calls: one descriptor of cost 1 on the
 * caller's address and one of cost 2 on the path, so each request spans two buckets with different costs.
 *
 * @param perMinute - each descriptor's limit a minute.
 * @param store - the `store:` section, if any (for a Redis store).
 * @returns the gateway configuration's text.
 */
export function mixedDomainYaml(perMinute: number, store = ''): string {
  return `rateLimiting:
  defaultTier: free
  tiers:
    free: { requestsPerMinute: 60, burstLimit: 2 }
${store}envoy:
  port: 0
  domains:
    - domain: mixed
      descriptors:
        - key: remote_address
          rate_limit: { requests_per_unit: ${perMinute}, unit: minute }
        - key: path
          rate_limit: { requests_per_unit: ${perMinute}, unit: minute }
`;
}

/** A request of the `mixed` domain: the address at cost 1, the path at cost 2. */
export const MIXED_REQUEST = {
  domain: 'mixed',
  descriptors: [
    { entries: [{ key: 'remote_address', value: '10.0.0.1' }], hits_addend: { value: 1 } },
    { entries: [{ key: 'path', value: '/a' }], hits_addend: { value: 2 } },
  ],
};
