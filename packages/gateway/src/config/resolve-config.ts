import { existsSync } from 'node:fs';
import { isAbsolute, resolve as resolvePath } from 'node:path';
import { compileEndpoint, DEFAULT_EXEMPT_ENDPOINTS, problemTypeResolver } from 'sluice/http';
import { addressListIssues } from './address-list.js';
import { defaultBodiesPerClient, defaultMaxBodies } from './bodies-per-client.js';
import { connectionCapIssues, DEFAULT_MAX_CONNECTIONS_PER_CLIENT } from './connection-caps.js';
import { resolveCorsConfig } from './cors-config.js';
import { resolveDecisionConfig } from './decision-config.js';
import { mtlsSubjectIssue } from './distinguished-name.js';
import { sizeBytes } from './duration.js';
import { resolveEnvoyConfig } from './envoy-config.js';
import { DEFAULT_PUBLIC_AUTH, type GatewayConfig, type RedisConfig } from './gateway-config.js';
import { resolveQuotaConfig } from './quota-config.js';
import { resolveRequestLogging } from './request-logging.js';
import { connectionScopeIssues, resolveClasses } from './resolve-classes.js';
import { resolveEndpoints } from './resolve-endpoints.js';
import { resolveIdentity } from './resolve-identity.js';
import { resolveOverload } from './resolve-overload.js';
import { resolvePenalty } from './resolve-penalty.js';
import { resolveTiers } from './resolve-tiers.js';
import { patternIssue } from './rule-issues.js';
import type { SemanticIssue } from './semantic-issue.js';
import { shadowIssues } from './shadow-issues.js';
import { didYouMean as hint, unknownName } from './suggest.js';
import { tierNameIssues } from './tier-policy-names.js';
import { checkUrl, durationIn, STORE_LEASE_MS, STORE_TIMEOUT_MS, timerMs } from './value-ranges.js';
import type { ConfigPath } from './violation.js';

// The raw shape after schema validation: only the types the schema guarantees, so every access is checked here.
// biome-ignore lint/suspicious/noExplicitAny: schema-validated YAML data, read field by field below
type Raw = Record<string, any>;

/**
 * Turns a schema-valid configuration object into the frozen {@link GatewayConfig}, applying defaults and the
 * checks the schema cannot express: the default tier exists, every class a rule names is configured (the start
 * check of the class form), limits and windows are whole, exactly one JWKS source and one Redis topology, files
 * that exist. Relative file names are resolved against the configuration file's folder.
 *
 * @param raw - the data, already valid against the schema.
 * @param baseDir - folder for relative file names.
 * @param file - the configuration file, for `GatewayConfig.file`.
 * @returns the configuration, or every issue found (never only the first).
 */
export function resolveConfig(
  raw: Raw,
  baseDir: string,
  file: string | undefined,
): { config: GatewayConfig | undefined; issues: SemanticIssue[] } {
  const issues: SemanticIssue[] = [];
  const fileAt = (value: string | undefined, path: ConfigPath): string | undefined => {
    if (value === undefined) return undefined;
    const full = isAbsolute(value) ? value : resolvePath(baseDir, value);
    if (!existsSync(full)) issues.push({ path, message: `file not found: ${full}` });
    return full;
  };

  const rl = raw.rateLimiting as Raw;
  const tiers = resolveTiers(rl, raw, issues);
  const defaultTier = rl.defaultTier as string;
  if (!Object.hasOwn(tiers, defaultTier)) {
    issues.push({
      path: ['rateLimiting', 'defaultTier'],
      message: unknownName('tier', defaultTier, Object.keys(tiers)),
    });
  }

  const rlSection = (raw.ratelimit ?? {}) as Raw;
  const { classes, issues: classIssues } = resolveClasses(rlSection);
  issues.push(...classIssues);

  const endpoints = resolveEndpoints(rl, raw, tiers, classes, issues);

  const server = (raw.server ?? {}) as Raw;
  const tls = server.tls as Raw | undefined;
  issues.push(...addressListIssues(['server', 'trustedProxies'], server.trustedProxies));
  issues.push(...connectionCapIssues(server.maxConnections, server.maxConnectionsPerClient));
  const upstream = (raw.upstream ?? {}) as Raw;
  checkUrl(upstream.url, ['upstream', 'url'], issues);
  const connections: number = upstream.connections ?? 128;
  const maxBodies: number = upstream.maxBodies ?? defaultMaxBodies(connections);
  const store = (raw.store ?? {}) as Raw;
  checkUrl(store.url, ['store', 'url'], issues);
  (store.cluster?.nodes ?? []).forEach((node: string, i: number) => {
    checkUrl(node, ['store', 'cluster', 'nodes', i], issues);
  });
  const storeType = storeTypeOf(store);
  if (storeType === 'redis' && /[{}]/.test(raw.keys?.prefix ?? '')) {
    issues.push({
      path: ['keys', 'prefix'],
      message: `must not contain { or } on Redis, whose keys use them for the cluster hash tag, got ${JSON.stringify(raw.keys.prefix)}`,
    });
  }
  let redis: RedisConfig | undefined;
  const topologies = ['url', 'cluster', 'sentinel'].filter((k) => store[k] !== undefined);
  if (storeType === 'memory') {
    const redisOnly = ['nodeCount', 'leaseTime'].filter((k) => store[k] !== undefined);
    for (const k of [...topologies, ...redisOnly])
      issues.push({ path: ['store', k], message: `applies only to store type "redis"`, atKey: true });
  } else {
    if (topologies.length !== 1) {
      issues.push({
        path: ['store'],
        message: `store type "redis" needs exactly one of url, cluster or sentinel, got ${topologies.length === 0 ? 'none' : topologies.join(' and ')}`,
      });
    }
    redis = Object.freeze({
      url: store.url,
      clusterNodes: store.cluster?.nodes,
      sentinel:
        store.sentinel === undefined
          ? undefined
          : Object.freeze({
              name: store.sentinel.name,
              nodes: store.sentinel.nodes,
              password: store.sentinel.password,
            }),
    });
  }

  const identity = (raw.identity ?? {}) as Raw;
  const jwt = identity.jwt as Raw | undefined;
  checkUrl(jwt?.jwksUrl, ['identity', 'jwt', 'jwksUrl'], issues);
  if (jwt !== undefined && (jwt.jwksFile === undefined) === (jwt.jwksUrl === undefined)) {
    issues.push({ path: ['identity', 'jwt'], message: 'needs exactly one of jwksFile or jwksUrl' });
  }
  const publicAuthName = identity.publicAuthClass ?? DEFAULT_PUBLIC_AUTH.name;
  let publicAuth = classes[publicAuthName];
  if (publicAuth === undefined) {
    if (identity.publicAuthClass !== undefined) {
      issues.push({
        path: ['identity', 'publicAuthClass'],
        message: `class "${publicAuthName}" is not configured: add ratelimit.${publicAuthName}.per_minute and .burst${hint(publicAuthName, Object.keys(classes))}`,
      });
    }
    publicAuth = DEFAULT_PUBLIC_AUTH;
  }
  issues.push(...tierNameIssues(Object.keys(tiers), Object.keys(classes), publicAuth.name));
  issues.push(...shadowIssues(endpoints, publicAuth.name));
  issues.push(...connectionScopeIssues(endpoints, identity.publicAuthClass, classes));

  const exemptions = (raw.exemptions ?? {}) as Raw;
  const problems = (raw.problems ?? {}) as Raw;
  if (exemptions.mtls !== undefined && tls?.clientCa === undefined) {
    issues.push({
      path: ['exemptions', 'mtls'],
      message: 'mTLS exemption needs server.tls with clientCa to verify client certificates',
    });
  }
  (exemptions.mtls?.allowedSubjects ?? []).forEach((entry: string, i: number) => {
    const message = mtlsSubjectIssue(entry);
    if (message !== undefined) issues.push({ path: ['exemptions', 'mtls', 'allowedSubjects', i], message });
  });
  (exemptions.endpoints ?? []).forEach((entry: string, i: number) => {
    patternIssue(() => compileEndpoint(entry), ['exemptions', 'endpoints', i], issues);
  });
  patternIssue(() => problemTypeResolver(problems.typeBase), ['problems', 'typeBase'], issues);
  const admin = raw.admin as Raw | undefined;
  const headers = (raw.headers ?? {}) as Raw;
  const metrics = (raw.metrics ?? {}) as Raw;

  const decision = resolveDecisionConfig(raw.decision);
  const envoy = resolveEnvoyConfig(raw.envoy, classes);
  const quota = resolveQuotaConfig(raw.quota, {
    storeType,
    keysPrefix: raw.keys?.prefix ?? '',
    ruleNames: endpoints.map((e) => e.name),
  });
  const cors = resolveCorsConfig(raw.cors, (server.requestIdHeader ?? 'x-request-id').toLowerCase());
  issues.push(...decision.issues, ...envoy.issues, ...quota.issues, ...cors.issues);

  const config: GatewayConfig = deepFreeze({
    file,
    enabled: rl.enabled !== false,
    defaultTier,
    tiers,
    endpoints,
    classes,
    maxTrackedKeys: rlSection.max_tracked_keys ?? 1_000_000,
    sweepIntervalMs: timerMs(rlSection.sweep_interval, ['ratelimit', 'sweep_interval'], issues) ?? 60_000,
    server: {
      host: server.host ?? '127.0.0.1',
      port: server.port ?? 8080,
      mode: server.mode ?? 'production',
      trustedProxies: server.trustedProxies ?? [],
      proxyHeader: server.proxyHeader ?? 'x-forwarded-for',
      maxBodyBytes: sizeBytes(server.maxBodySize) ?? 10 * 1024 * 1024,
      bodyTimeoutMs: timerMs(server.bodyTimeout, ['server', 'bodyTimeout'], issues) ?? 20_000,
      bodyMinRate: server.bodyMinRate ?? 500,
      maxConnections: server.maxConnections,
      maxConnectionsPerClient: server.maxConnectionsPerClient ?? DEFAULT_MAX_CONNECTIONS_PER_CLIENT,
      shutdownTimeoutMs: timerMs(server.shutdownTimeout, ['server', 'shutdownTimeout'], issues) ?? 30_000,
      requestIdHeader: (server.requestIdHeader ?? 'x-request-id').toLowerCase(),
      tls:
        tls === undefined
          ? undefined
          : {
              cert: fileAt(tls.cert, ['server', 'tls', 'cert']) as string,
              key: fileAt(tls.key, ['server', 'tls', 'key']) as string,
              clientCa: fileAt(tls.clientCa, ['server', 'tls', 'clientCa']),
            },
    },
    upstream: {
      url: upstream.url,
      connectTimeoutMs: timerMs(upstream.connectTimeout, ['upstream', 'connectTimeout'], issues) ?? 5_000,
      responseTimeoutMs: timerMs(upstream.responseTimeout, ['upstream', 'responseTimeout'], issues) ?? 30_000,
      bodyTimeoutMs: timerMs(upstream.bodyTimeout, ['upstream', 'bodyTimeout'], issues) ?? 30_000,
      preserveHost: upstream.preserveHost === true,
      connections,
      queueTimeoutMs: timerMs(upstream.queueTimeout, ['upstream', 'queueTimeout'], issues) ?? 5_000,
      maxBodies,
      maxBodiesPerClient: upstream.maxBodiesPerClient ?? defaultBodiesPerClient(maxBodies, connections),
    },
    store: {
      type: storeType,
      redis,
      failureMode: store.failureMode ?? 'open',
      timeoutMs: durationIn(store.timeout, ['store', 'timeout'], STORE_TIMEOUT_MS, issues) ?? 100,
      nodeCount: store.nodeCount ?? 1,
      leaseTimeMs: durationIn(store.leaseTime, ['store', 'leaseTime'], STORE_LEASE_MS, issues) ?? 5_000,
    },
    identity: resolveIdentity(identity, fileAt, publicAuth),
    exemptions: {
      endpoints: exemptions.endpoints ?? DEFAULT_EXEMPT_ENDPOINTS,
      mtlsSubjects: exemptions.mtls?.allowedSubjects,
      loopbackInDevelopment: exemptions.loopbackInDevelopment !== false,
    },
    headers: { mode: headers.mode ?? 'both' },
    target: {
      encodedSlashes: ((raw.target as Raw | undefined)?.encodedSlashes ?? 'reject') as 'reject' | 'decode',
      pathParameters: ((raw.target as Raw | undefined)?.pathParameters ?? 'reject') as
        | 'reject'
        | 'strip'
        | 'keep',
    },
    problems: { typeBase: problems.typeBase },
    keys: { prefix: raw.keys?.prefix ?? '' },
    metrics: { enabled: metrics.enabled !== false, prefix: metrics.prefix ?? 'sluice' },
    admin:
      admin === undefined
        ? undefined
        : {
            host: admin.host ?? '127.0.0.1',
            port: admin.port ?? 9091,
            token: admin.token,
            tokenName: admin.token_name ?? 'admin',
          },
    logging: {
      level: raw.logging?.level ?? 'info',
      requests: resolveRequestLogging(raw.logging?.requests, raw.logging?.level ?? 'info', issues),
    },
    reload: { watch: raw.reload?.watch !== false },
    decision: decision.config,
    envoy: envoy.config,
    quota: quota.config,
    cors: cors.config,
    penalty: resolvePenalty(raw.penalty as Raw | undefined, issues),
    overload: resolveOverload(raw.overload as Raw | undefined, issues),
  });
  return { config: issues.length === 0 ? config : undefined, issues };
}

function storeTypeOf(store: Raw): 'memory' | 'redis' {
  return (store.type ?? 'memory') as 'memory' | 'redis';
}

function deepFreeze<T>(value: T): T {
  if (typeof value === 'object' && value !== null && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const v of Object.values(value)) deepFreeze(v);
  }
  return value;
}
