/**
 * One-way imports: core <- stores <- http <- adapters <- gateway. The client SDK and the core import nothing
 * from Node. Each rule names the layer it protects so a violation reads as a sentence.
 */
const S = '^packages/sluice/src/';
const STORES = `${S}(memory|redis)/`;
const ADAPTERS = `${S}(node|express|fastify|hono)/`;

/*
 * The gateway's folders in layers, lowest first: a folder imports only from lower layers, and from a folder of
 * its own layer only where GATEWAY_PEERS says so (an acyclic list), so no cycle between folders can form. A new
 * folder must be placed here: the rule gateway-unplaced refuses any file outside these folders.
 */
const G = '^packages/gateway/src/';
const GATEWAY_LAYERS = [
  ['config'],
  ['identity', 'limits', 'quota', 'store', 'log', 'metrics'],
  ['admission'],
  ['server', 'proxy'],
  ['decision', 'envoy', 'dashboard', 'replay'],
  ['gateway'],
  ['cli', 'demo', 'bin'],
];
/** Imports allowed inside one layer: importer -> folders it may use. */
const GATEWAY_PEERS = { quota: ['log'], server: ['proxy'], bin: ['cli'], cli: ['demo'] };
/*
 * TEMPORARY: the runtime holds the upstream pool and names its type (proxy/, a layer above admission); the
 * gateway builds the pool and hands the builder over (RuntimeEvents.upstreamPool), so the import is type-only.
 * Remove once the pool's shape is an interface of admission/, or proxy/ moves below admission.
 */
const RUNTIME_NAMES_POOL = {
  from: `${G}admission/runtime\\.ts$`,
  to: `${G}proxy/upstream-proxy\\.ts$`,
};

const folders = (names) => `${G}(${names.join('|')})/`;

function gatewayLayerRules() {
  const rules = [];
  GATEWAY_LAYERS.forEach((layer, i) => {
    const above = GATEWAY_LAYERS.slice(i + 1).flat();
    for (const folder of layer) {
      const forbidden = [
        ...above,
        ...layer.filter((f) => f !== folder && !(GATEWAY_PEERS[folder] ?? []).includes(f)),
      ];
      if (forbidden.length === 0) continue;
      const to = { path: folders(forbidden) };
      if (folder === 'admission') to.pathNot = RUNTIME_NAMES_POOL.to;
      rules.push({
        name: `gateway-${folder}-layer`,
        comment: `gateway/src/${folder}/ imports only lower layers${GATEWAY_PEERS[folder] ? ` and ${GATEWAY_PEERS[folder].join(', ')}/` : ''} (config < identity, limits, quota, store, log, metrics < admission < server, proxy < decision, envoy, dashboard, replay < gateway < cli, demo, bin).`,
        severity: 'error',
        from: { path: `${G}${folder}/` },
        to,
      });
    }
  });
  return rules;
}

module.exports = {
  forbidden: [
    ...gatewayLayerRules(),
    {
      name: 'gateway-admission-pool-exception',
      comment: "The tolerated upward import of admission (RUNTIME_NAMES_POOL) is the runtime's alone.",
      severity: 'error',
      from: { path: `${G}admission/`, pathNot: RUNTIME_NAMES_POOL.from },
      to: { path: `${G}proxy/` },
    },
    {
      name: 'gateway-runtime-pool-type-only',
      comment:
        "The runtime only names the pool (RUNTIME_NAMES_POOL): loading the proxy, and with it the HTTP client, is the gateway's.",
      severity: 'error',
      from: { path: RUNTIME_NAMES_POOL.from },
      to: { path: RUNTIME_NAMES_POOL.to, dependencyTypesNot: ['type-only'] },
    },
    {
      name: 'gateway-listeners-beside-proxy',
      comment:
        'The decision API, the Envoy service and the dashboard decide through admission/, never through the proxy listener (server/).',
      severity: 'error',
      from: { path: `${G}(decision|envoy|dashboard)/` },
      to: { path: `${G}server/` },
    },
    {
      name: 'gateway-unplaced',
      comment:
        'Every gateway source file lives in a folder of GATEWAY_LAYERS (or is the package entry, index.ts).',
      severity: 'error',
      from: { path: G, pathNot: [folders(GATEWAY_LAYERS.flat()), `${G}index\\.ts$`] },
      to: {},
    },
    {
      name: 'gateway-entry-is-top',
      comment: 'index.ts is the package entry: nothing inside the package imports it.',
      severity: 'error',
      from: { path: G },
      to: { path: `${G}index\\.ts$` },
    },
    {
      name: 'dashboard-ui-is-browser-code',
      comment:
        'The dashboard bundle runs in the browser: no Node module, and of the gateway only type-only imports (message and configuration shapes).',
      severity: 'error',
      from: { path: '^packages/gateway/(dashboard|demo|replay)-ui/src/' },
      to: { path: '^packages/gateway/src/', dependencyTypesNot: ['type-only'] },
    },
    {
      name: 'dashboard-ui-no-node',
      severity: 'error',
      from: { path: '^packages/gateway/(dashboard|demo|replay)-ui/src/' },
      to: { dependencyTypes: ['core'] },
    },
    {
      name: 'quota-above-stores-and-metrics',
      comment: 'Quota tracking uses the core, the stores and the metrics sink; no HTTP, adapter or exporter.',
      severity: 'error',
      from: { path: `${S}quota/` },
      to: { path: S, pathNot: `${S}(quota|core|memory|redis|metrics)/` },
    },
    {
      name: 'exporters-above-http',
      comment:
        'Prometheus and OpenTelemetry exporters use the core, the stores, HTTP and the metrics sink only.',
      severity: 'error',
      from: { path: `${S}(prometheus|otel)/` },
      to: { path: S, pathNot: [`${S}$1/`, `${S}(core|memory|redis|http|metrics)/`] },
    },
    {
      name: 'http-below-observability',
      comment:
        'HTTP semantics never import quota tracking or an exporter: they build on it, not the reverse.',
      severity: 'error',
      from: { path: `${S}http/` },
      to: { path: `${S}(quota|prometheus|otel)/` },
    },
    {
      name: 'core-is-pure',
      comment: 'The engine (core) does no I/O: no Node module, no npm package, nothing from other layers.',
      severity: 'error',
      from: { path: `${S}core/` },
      to: { pathNot: `${S}core/` },
    },
    {
      name: 'shared-store-is-core-only',
      comment:
        'The shared-memory store (sluice/shared) imports the core only, like the memory store: no other store, HTTP, metrics or gateway.',
      severity: 'error',
      from: { path: `${S}shared/` },
      to: { path: S, pathNot: `${S}(shared|core)/` },
    },
    {
      name: 'stores-below-http',
      comment: 'Stores depend on the core only, never on HTTP, adapters, metrics or the gateway.',
      severity: 'error',
      from: { path: STORES },
      to: { path: `${S}(http|node|express|fastify|hono|prometheus|client|otel|quota)/|^packages/gateway/` },
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
