import { compileTargetCanonicalizer, inRanges, normalizeIp, parseTrustedProxies } from 'sluice/http';
import { costFindings } from './cost-warnings.js';
import type { GatewayConfig } from './gateway-config.js';
import { coveredFamilies } from './ip-coverage.js';
import { methodsOverlap, patternFindings, patternKey } from './pattern-warnings.js';
import { type ConfigPath, formatPath, located } from './violation.js';

/**
 * The stable codes of configuration warnings: a valid file that probably does not do what its author meant.
 * Each is documented in docs/guide/configuration.md ("Configuration warnings").
 */
export const WarningCode = Object.freeze({
  /** The admin listener listens on an address other hosts can reach, in plain HTTP. */
  AdminPlaintextPublic: 'W_ADMIN_PLAINTEXT_PUBLIC',
  /** The decision API listens on an address other hosts can reach, in plain HTTP. */
  DecisionPlaintextPublic: 'W_DECISION_PLAINTEXT_PUBLIC',
  /** The Envoy rate limit service listens on an address other hosts can reach, in plaintext gRPC. */
  EnvoyPlaintextPublic: 'W_ENVOY_PLAINTEXT_PUBLIC',
  /** `server.trustedProxies` covers every IPv4 or every IPv6 address, alone or together. */
  TrustedProxiesAll: 'W_TRUSTED_PROXIES_ALL',
  /** An endpoint pattern no canonical request path can match. */
  PatternNeverMatches: 'W_PATTERN_NEVER_MATCHES',
  /** An endpoint pattern with a query, which matching ignores. */
  PatternQuery: 'W_PATTERN_QUERY',
  /** An endpoint pattern equal to an earlier one of the same list, for overlapping methods. */
  PatternDuplicate: 'W_PATTERN_DUPLICATE',
  /**
   * No `upstream.url`, no `decision:` and no `envoy:` section: `sluice serve` refuses the file unless `--upstream`
   * is given, and a reload to it is rejected. Reported by `sluice validate` only (see {@link noUpstreamWarning}):
   * whether the file can be served depends on the command line.
   */
  NoUpstream: 'W_NO_UPSTREAM',
  /**
   * `server.maxConnections` is above 45% of the open file limit. Logged by the gateway at start only: the limit is
   * the running process's, which `sluice validate` cannot know.
   */
  MaxConnectionsFileLimit: 'W_MAX_CONNECTIONS_FILE_LIMIT',
  /**
   * A `quota:` section with metrics on and no `admin:` section: the per-tenant usage series are served only by the
   * admin listener's `/metrics` (the proxy listener's answers anyone), so no scrape sees them.
   */
  QuotaSeriesUnserved: 'W_QUOTA_SERIES_UNSERVED',
  /**
   * A cost settled after the response (`cost:`), whatever its reservation, with no concurrency limit bounding the
   * requests in flight: requests sent at once can be served more than they are charged (see `costFindings`).
   */
  CostParallel: 'W_COST_PARALLEL',
});

/** One of {@link WarningCode}. */
export type WarningCode = (typeof WarningCode)[keyof typeof WarningCode];

/** A warning found in a resolved configuration, before its position in the file is known. */
export interface WarningFinding {
  readonly code: WarningCode;
  readonly path: ConfigPath;
  readonly message: string;
  /** What to write instead. */
  readonly suggestion: string;
}

/** A configuration warning with its place in the file, shaped like a violation. */
export interface ConfigWarning {
  readonly code: WarningCode;
  /** Dotted path such as `admin.host`. */
  readonly path: string;
  /** 1-based line in the file, or 0 when unknown. */
  readonly line: number;
  /** 1-based column, or 0 when unknown. */
  readonly column: number;
  readonly message: string;
  readonly suggestion: string;
}

const LOOPBACK = parseTrustedProxies('loopback', ['loopback']);

/**
 * Checks a valid configuration for settings that are allowed but risky or useless: an admin, decision or Envoy
 * listener reachable from other hosts without TLS, trusted proxies that cover every address, endpoint patterns
 * that can never match, carry a query, or repeat an earlier one.
 *
 * @param config - the resolved configuration.
 * @returns every finding, in file order of the sections checked; empty when there is nothing to say.
 */
export function checkConfig(config: GatewayConfig): WarningFinding[] {
  const out: WarningFinding[] = [];
  if (config.admin !== undefined && !isLoopbackHost(config.admin.host)) {
    out.push({
      code: WarningCode.AdminPlaintextPublic,
      path: ['admin', 'host'],
      message: `the admin listener on ${config.admin.host} is reachable from other hosts without TLS: the admin token, key resets and the configuration travel in plain text`,
      suggestion:
        'keep admin.host on 127.0.0.1 (the default) and reach it through an SSH tunnel or a reverse proxy that terminates TLS',
    });
  }
  if (config.decision !== undefined && !isLoopbackHost(config.decision.host)) {
    out.push({
      code: WarningCode.DecisionPlaintextPublic,
      path: ['decision', 'host'],
      message: `the decision API on ${config.decision.host} is reachable from other hosts without TLS: whoever reaches it can spend any client's tokens`,
      suggestion:
        'listen on 127.0.0.1 next to the proxy (the default), or keep it on a private network and narrow decision.allowedPeers',
    });
  }
  if (config.envoy !== undefined && !isLoopbackHost(config.envoy.host)) {
    out.push({
      code: WarningCode.EnvoyPlaintextPublic,
      path: ['envoy', 'host'],
      message: `the Envoy rate limit service on ${config.envoy.host} is reachable from other hosts without TLS: whoever it admits can spend any descriptor's tokens and send limit overrides`,
      suggestion:
        'listen on 127.0.0.1 next to Envoy (the default), or keep it on a private network and list only your Envoy hosts in envoy.allowedPeers',
    });
  }
  if (config.quota !== undefined && config.admin === undefined && config.metrics.enabled) {
    out.push({
      code: WarningCode.QuotaSeriesUnserved,
      path: ['quota'],
      message: `the per-tenant usage series (${config.metrics.prefix}_quota_usage_ratio) are served only by the admin listener's /metrics, and there is no admin: section: no scrape sees them, nor the quota alert rules of sluice rules`,
      suggestion:
        'add an admin: section and scrape its /metrics with the token, or rely on the webhook, the warn log lines and the alerts counter',
    });
  }
  out.push(...trustedProxyFindings(config));
  out.push(...ruleFindings(config), ...exemptionFindings(config));
  for (const f of costFindings(config)) out.push({ code: WarningCode.CostParallel, ...f });
  return out;
}

const positioned = new WeakMap<GatewayConfig, readonly ConfigWarning[]>();

/**
 * Records the warnings of a configuration the loader produced, with their lines, for {@link configWarnings}.
 *
 * @param config - the loaded configuration.
 * @param warnings - its warnings.
 */
export function rememberWarnings(config: GatewayConfig, warnings: readonly ConfigWarning[]): void {
  positioned.set(config, Object.freeze([...warnings]));
}

/**
 * The warnings of a configuration: with file positions when it came from `loadConfigText` or `loadConfigFile`
 * (the same list as their `warnings`), else computed now without positions (line and column 0). The gateway
 * logs them at `warn` when it starts and after a reload.
 *
 * @param config - a configuration.
 */
export function configWarnings(config: GatewayConfig): readonly ConfigWarning[] {
  return (
    positioned.get(config) ??
    checkConfig(config).map((f) => ({ ...f, path: formatPath(f.path), line: 0, column: 0 }))
  );
}

/**
 * The warning of a file that serves nothing without `--upstream` (see {@link WarningCode.NoUpstream}), for
 * `sluice validate`. It is not among `checkConfig`'s findings: a file without `upstream.url` is the usual form when
 * the upstream is given on the command line, and the gateway started from it has one.
 *
 * @param config - the resolved configuration, with the command line's `--upstream` applied when given.
 * @param file - the configuration file, named in the message.
 * @returns the warning (line 0: the key is missing), or `undefined` when the file can be served as it is.
 */
export function noUpstreamWarning(config: GatewayConfig, file: string): ConfigWarning | undefined {
  if (!servesNothing(config)) return undefined;
  return {
    code: WarningCode.NoUpstream,
    path: 'upstream.url',
    line: 0,
    column: 0,
    message: `${noUpstreamMessage(file)}; sluice serve refuses this file without --upstream, and a reload to it is rejected`,
    suggestion:
      'set upstream.url, pass --upstream URL to sluice serve (and to sluice validate), or add a decision: or envoy: section',
  };
}

/**
 * True when a configuration has nothing to serve: no `upstream.url` (after `--upstream`), no `decision:` and no
 * `envoy:` section. `sluice serve` refuses such a file and a reload to one is rejected, with {@link noUpstreamMessage}.
 *
 * @param config - a resolved configuration.
 */
export function servesNothing(config: GatewayConfig): boolean {
  return config.upstream.url === undefined && config.decision === undefined && config.envoy === undefined;
}

/**
 * Why a configuration that {@link servesNothing} is refused: one wording for the start, the reload and
 * `sluice validate`.
 *
 * @param file - the configuration file.
 */
export function noUpstreamMessage(file: string): string {
  return `no upstream: set upstream.url in ${file} or pass --upstream URL`;
}

/**
 * The warning of a `server.maxConnections` above what the open file limit leaves room for (see
 * {@link WarningCode.MaxConnectionsFileLimit}), logged by the gateway at start.
 *
 * @param maxConnections - the configured cap.
 * @param openFileLimit - the process's soft open file limit.
 */
export function maxConnectionsWarning(maxConnections: number, openFileLimit: number): ConfigWarning {
  return {
    code: WarningCode.MaxConnectionsFileLimit,
    path: 'server.maxConnections',
    line: 0,
    column: 0,
    message: `server.maxConnections (${maxConnections}) is above 45% of the open file limit (${openFileLimit}): it leaves too few file descriptors for the rest of the gateway (each proxied connection may need two)`,
    suggestion: 'raise the open file limit (ulimit -n), or lower server.maxConnections',
  };
}

/**
 * Renders warnings one a line as `file:line:column path: warning CODE: message; suggestion: ...`, the shape of
 * violations, so editors and CI logs link both.
 *
 * @param file - the file name shown first.
 */
export function formatWarnings(file: string, warnings: readonly ConfigWarning[]): string {
  return warnings
    .map(
      (w) =>
        `${located(file, w)} ${w.path === '' ? '(file)' : w.path}: warning ${w.code}: ${w.message}; suggestion: ${w.suggestion}`,
    )
    .join('\n');
}

function isLoopbackHost(host: string): boolean {
  if (host.toLowerCase() === 'localhost') return true;
  const ip = normalizeIp(host.startsWith('[') && host.endsWith(']') ? host.slice(1, -1) : host);
  return ip !== undefined && inRanges(ip, LOOPBACK);
}

function trustedProxyFindings(config: GatewayConfig): WarningFinding[] {
  const list = config.server.trustedProxies;
  const header = config.server.proxyHeader === 'forwarded' ? 'Forwarded' : 'X-Forwarded-For';
  const finding = (path: ConfigPath, families: string[]): WarningFinding => ({
    code: WarningCode.TrustedProxiesAll,
    path,
    message: `trusts every ${families.join(' and every ')} address as a proxy: any client can write ${header} (and identity headers) and choose the address it is limited as`,
    suggestion:
      'list only the addresses of your load balancers or reverse proxies, for example 10.0.0.0/8 or loopback',
  });
  const out: WarningFinding[] = [];
  list.forEach((entry, i) => {
    const families = coveredFamilies(parseTrustedProxies('entry', [entry]));
    if (families.length > 0) out.push(finding(['server', 'trustedProxies', i], families));
  });
  if (out.length > 0) return out;
  const families = coveredFamilies(parseTrustedProxies('server.trustedProxies', list));
  return families.length > 0 ? [finding(['server', 'trustedProxies'], families)] : [];
}

function ruleFindings(config: GatewayConfig): WarningFinding[] {
  const out: WarningFinding[] = [];
  const canonical = compileTargetCanonicalizer(config.target).path;
  const seen: { key: string; methods: readonly string[] | undefined; index: number }[] = [];
  for (const rule of config.endpoints) {
    const path: ConfigPath = ['rateLimiting', 'endpoints', rule.index, 'pattern'];
    for (const f of patternFindings(rule.pattern, undefined, canonical))
      out.push({ ...f, code: f.code, path });
    const key = patternKey(rule.pattern);
    const earlier = seen.find((s) => s.key === key && methodsOverlap(s.methods, rule.methods));
    if (earlier !== undefined) {
      out.push({
        code: WarningCode.PatternDuplicate,
        path,
        message: `matches the same requests as rateLimiting.endpoints[${earlier.index}].pattern: both rules apply to every request they match, and the stricter one decides`,
        suggestion: 'merge the two rules, or give them methods that do not overlap',
      });
    }
    seen.push({ key, methods: rule.methods, index: rule.index });
  }
  return out;
}

function exemptionFindings(config: GatewayConfig): WarningFinding[] {
  const out: WarningFinding[] = [];
  const canonical = compileTargetCanonicalizer(config.target).path;
  const seen: { key: string; methods: string[]; index: number }[] = [];
  config.exemptions.endpoints.forEach((entry, i) => {
    const text = entry.trim();
    const space = text.indexOf(' ');
    const methods =
      space < 0
        ? []
        : text
            .slice(0, space)
            .split(',')
            .map((m) => m.trim().toUpperCase());
    const pattern = space < 0 ? text : text.slice(space + 1).trim();
    const prefix = space < 0 ? '' : `${text.slice(0, space)} `;
    const path: ConfigPath = ['exemptions', 'endpoints', i];
    for (const f of patternFindings(pattern, (p) => `${prefix}${p}`, canonical))
      out.push({ ...f, code: f.code, path });
    const key = patternKey(pattern);
    const earlier = seen.find((s) => s.key === key && methodsOverlap(s.methods, methods));
    if (earlier !== undefined) {
      out.push({
        code: WarningCode.PatternDuplicate,
        path,
        message: `exempts the same requests as exemptions.endpoints[${earlier.index}]`,
        suggestion: 'remove one of the two entries',
      });
    }
    seen.push({ key, methods, index: i });
  });
  return out;
}
