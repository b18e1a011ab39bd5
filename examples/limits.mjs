// The limits every quick start shares: 60 requests per minute per client address on /api/*, in bursts of 5.
// A complete file to copy: in your project, import from 'sluice', 'sluice/memory' and 'sluice/http' as here.
import { Limiter } from 'sluice';
import { createHttpLimiter } from 'sluice/http';
import { MemoryStore } from 'sluice/memory';

/** A limiter for HTTP: one policy, one endpoint rule keyed by the client address. */
export function createLimits() {
  const limiter = new Limiter({
    policies: [{ name: 'api', quota: 60, window: 60, burst: 5 }],
    store: new MemoryStore({ maxTrackedKeys: 100_000 }),
  });
  // '/api/*' limits '/api' and '/api/' too, not only the paths below: routers serve the prefix with the routes
  // below it, so a rule that left it out would let it through uncounted.
  return createHttpLimiter({ limiter, rules: [{ path: '/api/*', policies: ['api'], key: 'ip' }] });
}

/** Whether this file is the program node runs (`node examples/express.mjs`), not an import. */
export function isMain(url) {
  return process.argv[1] !== undefined && new URL(url).pathname === process.argv[1];
}
