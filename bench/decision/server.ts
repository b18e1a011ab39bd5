/**
 * The Sluice side of the decision benchmark, in its own process: a gateway (no upstream) with the HTTP decision
 * API and the Envoy rate limit service, over the memory store or Redis. Prints `ready <decision> <envoy>`.
 *
 *   tsx bench/decision/server.ts memory
 *   tsx bench/decision/server.ts redis redis://127.0.0.1:6379
 */
import { startBenchGateway } from './bench-gateway.js';

const [store = 'memory', url = ''] = process.argv.slice(2);
const gateway = await startBenchGateway(store, url);
console.log(`ready ${gateway.decisionUrl}${gateway.config.decision?.path} ${gateway.envoyAddress}`);
process.on('SIGTERM', () => {
  void gateway.close().then(() => process.exit(0));
});
