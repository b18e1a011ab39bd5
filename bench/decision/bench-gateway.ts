/**
 * The gateway both decision-benchmark processes run: limits far above what the machine can send, so every
 * decision is a full one that admits (the common case), draft-11 headers, the decision API and the Envoy service
 * configured (the gateway starts both listeners), on the memory store or Redis.
 */
import { loadConfigText } from '../../packages/gateway/src/config/load-config.js';
import { Gateway } from '../../packages/gateway/src/gateway/gateway.js';
import { createLogger } from '../../packages/gateway/src/log/create-logger.js';

/**
 * Starts the benchmark's gateway.
 *
 * @param store - `memory` or `redis`.
 * @param url - the Redis URL, for `redis`.
 */
export async function startBenchGateway(store = 'memory', url = ''): Promise<Gateway> {
  const yaml = `rateLimiting:
  defaultTier: standard
  tiers:
    standard:
      requestsPerMinute: 600000000
      burstLimit: 100000000
headers:
  mode: draft-11
server:
  port: 0
store:
  type: ${store}
${store === 'redis' ? `  url: ${url}\n` : ''}logging:
  level: warn
metrics:
  enabled: true
decision:
  port: 0
envoy:
  port: 0
  domains:
    - domain: bench
      descriptors:
        - key: remote_address
          rate_limit:
            requests_per_unit: 10000000
            unit: second
`;
  const loaded = loadConfigText(yaml, undefined, { env: {} });
  if (!loaded.ok) throw new Error(JSON.stringify(loaded.violations));
  return Gateway.start({ config: loaded.config, logger: createLogger('warn'), watch: false });
}
