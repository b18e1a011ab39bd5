import { addressListIssues } from './address-list.js';
import type { ConfigPath } from './violation.js';

/**
 * Connections a decision listener (`decision.maxConnections`, `envoy.maxConnections`) holds at once when its
 * section does not say: far more than a fleet of NGINX workers with keep-alive pools or of Envoy workers (one
 * HTTP/2 connection each) opens, and a bound on the descriptors an allowed peer can take.
 */
export const DEFAULT_LISTENER_MAX_CONNECTIONS = 4096;

/** Names of the request headers the decision API reads and of the one it writes for the proxy. */
export interface DecisionHeaderNames {
  /** The original request method (NGINX: `$request_method`). Default `x-original-method`. */
  readonly method: string;
  /** The original request target, path and query (NGINX: `$request_uri`). Default `x-original-uri`. */
  readonly uri: string;
  /** The original client address (NGINX: `$remote_addr`). Default `x-real-ip`. */
  readonly clientAddress: string;
  /** Optional cost of the original request in tokens. Default `x-ratelimit-cost`. */
  readonly cost: string;
  /**
   * Response header carrying the problem body of a denial on one line, for proxies that discard the body of the
   * decision (NGINX `auth_request`). Default `x-ratelimit-problem`.
   */
  readonly problem: string;
}

/** The resolved `decision:` section: the HTTP decision API for NGINX `auth_request` and other proxies. */
export interface DecisionConfig {
  /** Listen address; default 127.0.0.1 (the API lets its caller spend any client's tokens). */
  readonly host: string;
  /** Listen port; default 8082; 0 picks a free port. */
  readonly port: number;
  /** The decision path; default `/decide`. */
  readonly path: string;
  /**
   * Peers allowed to connect (CIDRs, addresses, `loopback`...); a connection from another is closed before it is
   * read (and a request on a connection opened before a reload removed its peer gets 403). Default `[loopback]`.
   */
  readonly allowedPeers: readonly string[];
  /** Connections held at once; further ones are closed as they are accepted. Default 4096; `0` is no cap. */
  readonly maxConnections: number;
  /**
   * Honour the identity headers (`identity.headers`) on decision requests. Default false: NGINX passes the
   * client's own headers through, so only a proxy that overwrites them may turn this on.
   */
  readonly trustIdentityHeaders: boolean;
  readonly headers: DecisionHeaderNames;
}

/** A problem in the `decision:` section, with its path from the file's root. */
export interface SectionIssue {
  readonly path: ConfigPath;
  readonly message: string;
}

// biome-ignore lint/suspicious/noExplicitAny: schema-validated YAML data, read field by field below
type Raw = Record<string, any>;

/**
 * Resolves the schema-valid `decision:` section with its defaults, and checks what the schema cannot: the peer
 * list parses.
 *
 * @param raw - the section as parsed, or `undefined` when the file has none (then the API is off).
 * @returns the frozen configuration (`undefined` when absent) and every issue found.
 *
 * @example
 * ```ts
 * resolveDecisionConfig({ port: 8082 }).config?.path; // '/decide'
 * ```
 */
export function resolveDecisionConfig(raw: Raw | undefined): {
  config: DecisionConfig | undefined;
  issues: SectionIssue[];
} {
  const issues: SectionIssue[] = [];
  if (raw === undefined) return { config: undefined, issues };
  const allowedPeers: string[] = raw.allowedPeers ?? ['loopback'];
  issues.push(...addressListIssues(['decision', 'allowedPeers'], allowedPeers));
  const h = (raw.headers ?? {}) as Raw;
  const config: DecisionConfig = Object.freeze({
    host: raw.host ?? '127.0.0.1',
    port: raw.port ?? 8082,
    path: raw.path ?? '/decide',
    allowedPeers: Object.freeze([...allowedPeers]),
    maxConnections: raw.maxConnections ?? DEFAULT_LISTENER_MAX_CONNECTIONS,
    trustIdentityHeaders: raw.trustIdentityHeaders === true,
    headers: Object.freeze({
      method: (h.method ?? 'x-original-method').toLowerCase(),
      uri: (h.uri ?? 'x-original-uri').toLowerCase(),
      clientAddress: (h.clientAddress ?? 'x-real-ip').toLowerCase(),
      cost: (h.cost ?? 'x-ratelimit-cost').toLowerCase(),
      problem: (h.problem ?? 'x-ratelimit-problem').toLowerCase(),
    }),
  });
  return { config: issues.length === 0 ? config : undefined, issues };
}
