import type { GatewayConfig } from '../config/gateway-config.js';

/** A setting a reload applies at once. */
const RELOAD = 'reload' as const;

/**
 * A setting bound at start (a listener, a connection, a file read once, a timer): a reload that changes it
 * reports its `name` in `restartRequired` and leaves it as it was.
 */
class AtStart {
  constructor(readonly name: string) {
    Object.freeze(this);
  }
}

/** When a change of one setting takes effect. */
type Applies = typeof RELOAD | AtStart;

/** A section declared field by field: TypeScript refuses the table until every field is declared. */
type Fields<T> = { readonly [K in keyof NonNullable<T>]-?: Applies };

const atStart = (name: string): AtStart => new AtStart(name);
const LISTENER = atStart('server.host/port');
const STORE = atStart('store');
const DECISION_LISTENER = atStart('decision.host/port');
const ENVOY_LISTENER = atStart('envoy.host/port');
// Categories and limits apply on reload; where usage lives and how alerts go out are fixed at start.
const QUOTA_TRACKING = atStart('quota.tracking/thresholds/webhook');

/**
 * Every setting of the configuration and when a change takes effect: one table, typed so that a setting added to
 * {@link GatewayConfig} does not compile until it is declared here (a whole section as one entry, or each of its
 * fields). Several settings may share a name (`store` covers the store section and the memory store's sizing).
 */
export const SETTINGS: { readonly [K in keyof GatewayConfig]-?: Applies | Fields<GatewayConfig[K]> } =
  Object.freeze({
    file: RELOAD,
    enabled: RELOAD,
    defaultTier: RELOAD,
    tiers: RELOAD,
    endpoints: RELOAD,
    classes: RELOAD,
    maxTrackedKeys: STORE,
    sweepIntervalMs: STORE,
    server: {
      host: LISTENER,
      port: LISTENER,
      mode: RELOAD,
      trustedProxies: RELOAD,
      proxyHeader: RELOAD,
      maxBodyBytes: RELOAD,
      bodyTimeoutMs: RELOAD,
      bodyMinRate: RELOAD,
      // Read for each connection the listener accepts.
      maxConnections: RELOAD,
      maxConnectionsPerClient: RELOAD,
      shutdownTimeoutMs: RELOAD,
      requestIdHeader: RELOAD,
      tls: atStart('server.tls'),
    },
    upstream: RELOAD,
    store: STORE,
    identity: RELOAD,
    exemptions: RELOAD,
    headers: RELOAD,
    target: RELOAD,
    problems: RELOAD,
    keys: RELOAD,
    metrics: { enabled: RELOAD, prefix: atStart('metrics.prefix') },
    admin: atStart('admin'),
    // Read per request from the configuration in effect: a reload changes which requests get a line.
    logging: { level: atStart('logging.level'), requests: RELOAD },
    reload: { watch: atStart('reload.watch') },
    decision: {
      host: DECISION_LISTENER,
      port: DECISION_LISTENER,
      path: RELOAD,
      allowedPeers: RELOAD,
      maxConnections: RELOAD,
      trustIdentityHeaders: RELOAD,
      headers: RELOAD,
    },
    envoy: {
      host: ENVOY_LISTENER,
      port: ENVOY_LISTENER,
      allowedPeers: RELOAD,
      maxConnections: RELOAD,
      shadowMode: RELOAD,
      maxDescriptors: RELOAD,
      canonicalPathKeys: RELOAD,
      domains: RELOAD,
    },
    quota: {
      storage: QUOTA_TRACKING,
      keyPrefix: QUOTA_TRACKING,
      windowSeconds: QUOTA_TRACKING,
      bucketSeconds: QUOTA_TRACKING,
      flushIntervalMs: QUOTA_TRACKING,
      thresholds: QUOTA_TRACKING,
      webhook: QUOTA_TRACKING,
      categories: RELOAD,
      defaultCategory: RELOAD,
      tenantLimits: RELOAD,
      defaultLimit: RELOAD,
    },
    // Read per request from the configuration in effect: a reload changes the origins at once.
    cors: RELOAD,
    penalty: RELOAD,
    // A reload keeps the shedder (its count in flight, what an adaptive limit learned) and takes the new limits.
    overload: RELOAD,
  });

/**
 * The names of the settings bound at start that differ between two configurations, in the order of
 * {@link SETTINGS}, each once.
 *
 * @example
 * ```ts
 * restartRequired(current, { ...current, logging: { level: 'debug' } }); // ['logging.level']
 * ```
 */
export function restartRequired(a: GatewayConfig, b: GatewayConfig): string[] {
  const out = new Set<string>();
  const compare = (applies: Applies, x: unknown, y: unknown) => {
    if (applies !== RELOAD && JSON.stringify(x) !== JSON.stringify(y)) out.add(applies.name);
  };
  for (const [key, entry] of Object.entries(SETTINGS) as [keyof GatewayConfig, unknown][]) {
    if (entry === RELOAD || entry instanceof AtStart) {
      compare(entry, a[key], b[key]);
      continue;
    }
    const x = a[key] as Record<string, unknown> | undefined;
    const y = b[key] as Record<string, unknown> | undefined;
    for (const [field, applies] of Object.entries(entry as Record<string, Applies>))
      compare(applies, x?.[field], y?.[field]);
  }
  return [...out];
}
