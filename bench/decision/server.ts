/**
 * The Sluice side of the decision benchmark, in its own process: a gateway (no upstream) with the HTTP decision
 * API and the Envoy rate limit service, over the memory store or Redis. Prints `ready <decision> <envoy>`.
 *
 *   tsx bench/decision/server.ts memory
 *   tsx bench/decision/server.ts redis redis://127.0.0.1:6379
 */
import { loadConfigText } from '../../packages/gateway/src/config/load-config.js';
import { createLogger } from '../../packages/gateway/src/log/create-logger.js';
import { Gateway } from '../../packages/gateway/src/server/gateway.js';
import { startRateLimitServices } from '../../packages/gateway/src/services/rate-limit-services.js';

const [store = 'memory', url = ''] = process.argv.slice(2);
// Limits far above what the machine can send, so every decision is a full one that admits (the common case).
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
const gateway = await Gateway.start({ config: loaded.config, logger: createLogger('warn'), watch: false });
const services = await startRateLimitServices(gateway);
console.log(`ready ${services.decision?.endpoint} ${services.envoy?.address}`);
process.on('SIGTERM', () => {
  void services
    .close()
    .then(() => gateway.close())
    .then(() => process.exit(0));
});
