/**
 * One-way imports: core <- stores <- http <- adapters <- gateway. The client SDK and the core import nothing
 * from Node. Each rule names the layer it protects so a violation reads as a sentence.
 */
const S = '^packages/sluice/src/';
const STORES = `${S}(memory|redis)/`;
const ADAPTERS = `${S}(node|express|fastify|hono)/`;
module.exports = {
  forbidden: [
    {
      name: 'core-is-pure',
      comment: 'The engine (core) does no I/O: no Node module, no npm package, nothing from other layers.',
      severity: 'error',
      from: { path: `${S}core/` },
      to: { pathNot: `${S}core/` },
    },
    {
      name: 'stores-below-http',
      comment: 'Stores depend on the core only, never on HTTP, adapters, metrics or the gateway.',
      severity: 'error',
      from: { path: STORES },
      to: { path: `${S}(http|node|express|fastify|hono|prometheus|client|otel)/|^packages/gateway/` },
    },
    {
      name: 'http-below-adapters',
      comment: 'HTTP semantics are framework neutral: no adapter, no gateway.',
      severity: 'error',
      from: { path: `${S}http/` },
      to: { path: `${ADAPTERS}|^packages/gateway/|^(express|fastify|hono)$` },
    },
    {
      name: 'adapters-below-gateway',
      comment: 'The library never reaches into the gateway.',
      severity: 'error',
      from: { path: '^packages/sluice/' },
      to: { path: '^packages/gateway/' },
    },
    {
      name: 'adapters-independent',
      comment: 'An adapter imports the shared HTTP core, never another adapter.',
      severity: 'error',
      from: { path: `${S}(node|express|fastify|hono)/` },
      to: { path: ADAPTERS, pathNot: `${S}$1/` },
    },
    {
      name: 'client-is-portable',
      comment:
        'The client SDK runs in browsers: no Node module and nothing of the server side; the portable core (clock, errors, options) is allowed.',
      severity: 'error',
      from: { path: `${S}client/` },
      to: {
        pathNot: [`${S}client/`, `${S}core/`, 'node_modules/structured-headers'],
      },
    },
    {
      name: 'metrics-sink-is-core-only',
      comment: 'The metrics recording interface is called from every layer, so it depends on the core alone.',
      severity: 'error',
      from: { path: `${S}metrics/` },
      to: { path: `${S}`, pathNot: `${S}(metrics|core)/` },
    },
    {
      name: 'no-node-in-core-or-client',
      severity: 'error',
      from: { path: `${S}(core|client)/` },
      to: { dependencyTypes: ['core'] },
    },
    {
      name: 'no-circular',
      severity: 'error',
      from: {},
      to: { circular: true },
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    exclude: { path: '(\\.test\\.ts$|/dist/|/testing/|/examples/)' },
    tsConfig: { fileName: 'tsconfig.json' },
    tsPreCompilationDeps: true,
    enhancedResolveOptions: {
      exportsFields: ['exports'],
      conditionNames: ['import', 'require', 'node', 'default', 'types'],
    },
  },
};
